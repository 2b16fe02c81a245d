"""Review 10: the panel and its operators driven as a user drives them (Pose Mode, a selection and an active bone),
judged by what Blender shows and evaluates."""
import pytest

from test_chains import build_body


def _pose_mode(bpy, obj, selected):
    from blender_ik_addon import keys
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in obj.pose.bones:
        keys.set_pose_bone_selected(pose_bone, pose_bone.name in selected)


def _hide(bpy, obj, bone_name, how):
    """Hide a bone from the user in one of Blender's ways."""
    if how == "collection":  # hiding a bone collection leaves its bones selected
        collection = obj.data.collections.new("Arm.L")
        collection.assign(obj.data.bones[bone_name])
        collection.is_visible = False
    elif how == "parent_collection":
        parent = obj.data.collections.new("Arms")
        collection = obj.data.collections.new("Arm.L", parent=parent)
        collection.assign(obj.data.bones[bone_name])
        parent.is_visible = False
    elif how == "pose_hide":  # H in Pose Mode: PoseBone.hide on 5.0, Bone.hide before
        pose_bone = obj.pose.bones[bone_name]
        if "hide" in pose_bone.bl_rna.properties:
            pose_bone.hide = True
        else:
            pose_bone.bone.hide = True
    elif how == "edit_hide":  # H in Edit Mode only: Pose Mode still shows the bone
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        obj.data.edit_bones[bone_name].hide = True
        bpy.ops.object.mode_set(mode="OBJECT")


@pytest.mark.parametrize("how", ["collection", "parent_collection", "pose_hide", "edit_hide"])
def test_chains_from_selected_takes_the_bones_pose_mode_shows_selected(blender, how):
    """Chains from Selected makes a chain for each bone Blender counts as selected (context.selected_pose_bones):
    not for a selected bone in a hidden bone collection (hiding a collection keeps its bones selected), nor for a
    hidden bone, and it does take a bone hidden in Edit Mode only, which Pose Mode shows."""
    bpy = blender
    obj = build_body(bpy)
    _hide(bpy, obj, "hand.L", how)
    _pose_mode(bpy, obj, {"hand.L", "foot.L"})  # a script's selection, or one made before hiding
    bpy.context.view_layer.update()
    shown = sorted(pose_bone.name for pose_bone in bpy.context.selected_pose_bones)
    assert shown == (["foot.L", "hand.L"] if how == "edit_hide" else ["foot.L"])
    objects = set(bpy.data.objects.keys())
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    assert sorted(chain.tip_bone for chain in obj.blender_ik.chains) == shown
    assert set(bpy.data.objects.keys()) - objects == {f"{tip}_target" for tip in shown}


@pytest.mark.parametrize("how", ["collection", "pose_hide"])
def test_chains_from_selected_says_when_every_selected_bone_is_hidden(blender, how):
    """Every selected bone hidden (a rigger selected Rigify's ORG bones, then hid their collection): the refusal says
    so, naming them, rather than asking to select bones."""
    bpy = blender
    obj = build_body(bpy)
    _hide(bpy, obj, "hand.L", how)
    _pose_mode(bpy, obj, {"hand.L"})
    with pytest.raises(RuntimeError, match=r"The selected bones \('hand.L'\) are hidden"):
        bpy.ops.blender_ik.chains_from_selected()
    assert not len(obj.blender_ik.chains)


def _scene_state(bpy, obj):
    """What an operator may change: objects, the chain list, the pose, the selection and active bone, the mode."""
    from blender_ik_addon import keys
    return (sorted(bpy.data.objects.keys()),
            [(c.name, c.tip_bone, c.target, c.pole, c.plane, c.bend, c.live) for c in obj.blender_ik.chains],
            obj.blender_ik.active_chain_index,
            {pb.name: (tuple(pb.rotation_quaternion), tuple(pb.location), keys.is_pose_bone_selected(pb),
                       [c.name for c in pb.constraints]) for pb in obj.pose.bones},
            obj.data.bones.active.name if obj.data.bones.active else None, obj.mode,
            bpy.context.view_layer.objects.active.name, bpy.context.scene.frame_current)


@pytest.mark.parametrize("operator", ["place_pole", "add_target", "chain_mirror"])
def test_the_active_chains_operators_name_the_chain_they_refuse(blender, operator):
    """Place Pole, Add Target and Mirror Chain work on the active chain; when its bones are no chain (here its tip
    bone was deleted), the message names the chain, as Solve's, Bake's and Build Rig's do, and nothing changes."""
    bpy = blender
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L", "foot.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    obj.blender_ik.chains["foot.L"].name = "left leg"
    obj.blender_ik.active_chain_index = 1
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones.remove(obj.data.edit_bones["foot.L"])
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones["hand.L"]
    before = _scene_state(bpy, obj)
    messages = {}
    for name in ("solve", operator):
        with pytest.raises(RuntimeError) as error:
            getattr(bpy.ops.blender_ik, name)(**({"chains": "ACTIVE"} if name == "solve" else {}))
        messages[name] = str(error.value)
        assert _scene_state(bpy, obj) == before
    assert "Chain 'left leg': " in messages["solve"]
    assert "Chain 'left leg': " in messages[operator], messages[operator]
    assert "'foot.L'" in messages[operator]


@pytest.mark.parametrize("operator", ["chain_add", "chains_from_selected", "chain_mirror"])
def test_a_chain_refused_for_bones_another_chain_has_names_both(blender, operator):
    """A new chain on bones that a chain has already is refused, and the message says which chain the user acted on
    (for Mirror Chain: the active chain, whose mirror already has a chain), which bone, and which chain has it. With
    chains named after their tips, the message was "Chain 'hand.L': Bone 'upper_arm.L' already belongs to chain
    'hand.L'" for Mirror Chain on chain 'hand.R'."""
    bpy = blender
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L", "hand.R"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    obj.blender_ik.active_chain_index = 1  # hand.R
    _pose_mode(bpy, obj, {"hand.L"})
    obj.data.bones.active = obj.data.bones["hand.L"]
    before = _scene_state(bpy, obj)
    with pytest.raises(RuntimeError) as error:
        getattr(bpy.ops.blender_ik, operator)()
    message = str(error.value)
    assert _scene_state(bpy, obj) == before
    assert "'upper_arm.L'" in message and "chain 'hand.L'" in message, message
    if operator == "chain_mirror":
        assert message.startswith("Error: Chain 'hand.R': "), message
    else:  # the chain it would have made does not exist: no chain is its subject
        assert not message.startswith("Error: Chain "), message


class _Recorder:
    """Stands in for a UILayout: records the labels drawn, accepts every other call."""

    def __init__(self, labels):
        self.labels = labels

    def label(self, text="", **kwargs):
        self.labels.append(text)

    def __getattr__(self, name):
        return lambda *args, **kwargs: _Recorder(self.labels)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value) if name == "labels" else None


def _panel_labels(bpy, obj):
    """What the panel and the list's rows show for the active object ``obj``: labels and status icons."""
    import types
    from blender_ik_addon import ui
    labels = []
    context = types.SimpleNamespace(active_object=obj, scene=bpy.context.scene)
    ui.VIEW3D_PT_blender_ik.draw(types.SimpleNamespace(layout=_Recorder(labels)), context)
    return labels


def test_the_read_out_follows_the_armature_object_not_its_name(blender):
    """The read-out of a solve stays with the armature when it is renamed, and a new armature that takes the old name
    (a re-imported character, a duplicate renamed after the original was deleted) shows no read-out until it is
    solved: read-outs were keyed by the armature's name, so the first showed "Not solved yet" and the second the other
    armature's "Out of reach by 46.8 cm"."""
    bpy = blender
    from mathutils import Vector
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    obj.blender_ik.chains[0].target.location += Vector((0.0, 0.0, -0.5))
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    solved = [text for text in _panel_labels(bpy, obj) if text.startswith("Out of reach by")]
    assert len(solved) == 1
    obj.name = "Hero"
    assert solved[0] in _panel_labels(bpy, obj)
    bpy.ops.object.mode_set(mode="OBJECT")
    other = build_body(bpy, "Body")
    assert other.name == "Body"
    _pose_mode(bpy, other, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    labels = _panel_labels(bpy, other)
    assert "Not solved yet" in labels and not any(text.startswith("Out of reach") for text in labels), labels


def _pole_used_elsewhere(bpy, obj, pole, case):
    from rigs import add_empty
    if case == "keyed":
        pole.keyframe_insert("location", frame=1)
        pole.location.x += 0.3
        pole.keyframe_insert("location", frame=10)
        bpy.context.scene.frame_set(1)
    elif case == "constrained":
        constraint = pole.constraints.new("COPY_LOCATION")
        constraint.target, constraint.use_z = add_empty("Control", (1.0, 1.5, 1.2)), False
    elif case == "driven":
        pole.driver_add("location", 2).driver.expression = "1.2"
    elif case == "other_armature":  # another character's chain bends toward it too
        other = build_body(bpy, "Other")
        other_chain = other.blender_ik.chains.add()
        other_chain.name = other_chain.tip_bone = "hand.L"
        other_chain.target, other_chain.plane, other_chain.pole = add_empty("Other goal", (0.5, 0.0, 1.0)), "POLE", pole
    elif case == "parent_of_something":
        add_empty("Prop", (1.1, 1.0, 1.3)).parent = pole
    elif case == "bone_constraint_target":  # a leftover aim constraint on a bone outside the chain
        obj.pose.bones["chest"].constraints.new("DAMPED_TRACK").target = pole
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()


def _hand_chain_with_pole(bpy):
    """The body's left hand chain (Chains from Selected) bending toward a pole Empty. Returns (object, chain, pole)."""
    from rigs import add_empty
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    chain = obj.blender_ik.chains[0]
    pole = add_empty("Pole", (1.0, 1.0, 1.2))
    chain.plane, chain.pole = "POLE", pole
    return obj, chain, pole


@pytest.mark.parametrize("case", ["keyed", "constrained", "driven", "other_armature", "parent_of_something",
                                  "bone_constraint_target"])
def test_place_pole_never_moves_a_pole_that_something_else_moves_or_uses(blender, case):
    """Place Pole moves the chain's pole object only when nothing else moves it or depends on where it is; else it
    makes a new Empty, as for a pole shared with another chain. A keyed pole went back at the next frame change (55 cm
    here), a constrained or driven one was not where it was put (the chain moved 7 to 14 mm on the next Solve), and
    another armature's chain, a child object or a bone's constraint that uses the pole moved with it."""
    bpy = blender
    obj, chain, pole = _hand_chain_with_pole(bpy)
    chain.target.location += __import__("mathutils").Vector((0.02, -0.05, 0.03))
    _pole_used_elsewhere(bpy, obj, pole, case)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    bones = ("upper_arm.L", "forearm.L", "hand.L", "chest")

    def evaluated():
        bpy.context.scene.frame_set(bpy.context.scene.frame_current)
        return ({o.name: o.matrix_world.copy() for o in bpy.data.objects},
                {n: (obj.matrix_world @ obj.pose.bones[n].tail).copy() for n in bones})

    objects, tails = evaluated()
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    placed = chain.pole.matrix_world.translation.copy()
    objects_after, tails_after = evaluated()
    assert (chain.pole.matrix_world.translation - placed).length < 1e-6
    for name, matrix in objects.items():  # the new pole aside, nothing moved
        assert all((a - b).length < 1e-6 for a, b in zip(matrix, objects_after[name])), name
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    for name in bones:
        assert (obj.matrix_world @ obj.pose.bones[name].tail - tails[name]).length < 1e-5, name


def test_place_pole_moves_the_pole_a_built_rig_follows(blender):
    """The chain's own built rig follows its pole: Place Pole moves that pole (the rig stays current, the chain does
    not move) rather than making a new one, which would leave the rig out of date."""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj, chain, pole = _hand_chain_with_pole(bpy)
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    bpy.context.view_layer.update()
    tails = {n: (obj.matrix_world @ obj.pose.bones[n].tail).copy() for n in ("upper_arm.L", "forearm.L", "hand.L")}
    objects = set(bpy.data.objects.keys())
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    assert chain.pole == pole and set(bpy.data.objects.keys()) == objects
    assert (pole.matrix_world.translation - __import__("mathutils").Vector((1.0, 1.0, 1.2))).length > 0.1
    assert rig_state(obj, chain) == "BUILT"
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)
    for name, tail in tails.items():
        assert (obj.matrix_world @ obj.pose.bones[name].tail - tail).length < 1e-5, name


def _report(capfd, operator, **kwargs):
    capfd.readouterr()
    assert operator(**kwargs) == {"FINISHED"}
    return capfd.readouterr().out


def test_reports_name_the_chain_by_its_name(blender, capfd):
    """Every report about a chain calls it by the name the list shows: a renamed chain by its name, not its tip
    bone's (Solve of one chain said "Solved 'hand.L'" for chain 'left arm', and did not name it when out of reach),
    and a chain made in Python without a name by its tip bone, as the list does (not '')."""
    bpy = blender
    from mathutils import Vector
    from rigs import add_empty
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    obj.blender_ik.chains[0].name = "left arm"
    unnamed = obj.blender_ik.chains.add()
    unnamed.tip_bone, unnamed.target = "foot.L", add_empty("Foot goal", (0.3, -0.1, 0.5))
    bpy.context.view_layer.update()
    for index, label in ((0, "left arm"), (1, "foot.L")):
        obj.blender_ik.active_chain_index = index
        assert f"Solved '{label}'" in _report(capfd, bpy.ops.blender_ik.solve, chains="ACTIVE")
        assert f"for chain '{label}'" in _report(capfd, bpy.ops.blender_ik.place_pole)
    obj.blender_ik.chains[0].target.location += Vector((0.0, 0.0, -0.5))
    obj.blender_ik.active_chain_index = 0
    assert "Chain 'left arm': target out of reach by" in _report(capfd, bpy.ops.blender_ik.solve, chains="ACTIVE")
    obj.blender_ik.active_chain_index = 1
    assert "Mirrored chain 'foot.L' to 'foot.R'" in _report(capfd, bpy.ops.blender_ik.chain_mirror)
    obj.blender_ik.active_chain_index = 1
    assert "Removed chain 'foot.L'" in _report(capfd, bpy.ops.blender_ik.chain_remove)
    obj.blender_ik.chains.add()  # a script's, nothing filled in: the list shows no name, nor does the report
    obj.blender_ik.active_chain_index = len(obj.blender_ik.chains) - 1
    assert "Removed the unnamed chain" in _report(capfd, bpy.ops.blender_ik.chain_remove)


def _rig_bones(obj):
    return sorted(bone.name for bone in obj.data.bones if bone.name.startswith("IKR-"))


@pytest.mark.parametrize("how", ["duplicate_name", "renamed_after_build"])
def test_a_chain_named_like_another_chains_rig_never_takes_that_rig(blender, how):
    """A chain whose name is the name another chain's rig was built under (a duplicate name typed in the list, or the
    other chain renamed after its build) has no rig: the list showed that rig on it ('out of date'), Remove Chain on
    it deleted the other chain's rig (10 helper bones), and Build Rig on it replaced the other chain's rig with its
    own. Now its row shows no rig, removing it keeps the other's, and Build Rig is refused, naming the other chain."""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L", "foot.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    arm, leg = obj.blender_ik.chains
    obj.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    helpers = _rig_bones(obj)
    assert len(helpers) > 3
    if how == "renamed_after_build":
        arm.name = "left arm"
    leg.name = "hand.L"
    assert rig_state(obj, arm) == "BUILT" and rig_state(obj, leg) == "NONE"
    obj.blender_ik.active_chain_index = 1
    if how == "renamed_after_build":
        before = _scene_state(bpy, obj)
        with pytest.raises(RuntimeError, match="Chain 'left arm' keeps its rig under the name 'hand.L'"):
            bpy.ops.blender_ik.build_rig(chains="ACTIVE")
        assert _scene_state(bpy, obj) == before and _rig_bones(obj) == helpers
    assert bpy.ops.blender_ik.chain_remove() == {"FINISHED"}
    assert [chain.name for chain in obj.blender_ik.chains] == [arm.name]
    assert _rig_bones(obj) == helpers and rig_state(obj, obj.blender_ik.chains[0]) == "BUILT"
    obj.blender_ik.chains[0].target.location.z += 0.05  # the rig follows its target
    bpy.context.view_layer.update()
    tail = obj.matrix_world @ obj.pose.bones["hand.L"].tail
    assert (tail - obj.blender_ik.chains[0].target.matrix_world.translation).length < 1e-5


def _not_evaluated(bpy, obj, how):
    """Put ``obj`` where Blender stops updating its transform: its matrix_world keeps its last value."""
    scene_collection = bpy.context.scene.collection
    if how == "disabled_in_viewports":  # the monitor icon
        obj.hide_viewport = True
    elif how in ("excluded_collection", "disabled_collection"):
        collection = bpy.data.collections.new("Controls")
        scene_collection.children.link(collection)
        collection.objects.link(obj)
        for users in obj.users_collection:
            if users != collection:
                users.objects.unlink(obj)
        if how == "excluded_collection":  # the checkbox in the Outliner
            bpy.context.view_layer.layer_collection.children["Controls"].exclude = True
        else:
            collection.hide_viewport = True
    elif how == "other_scene":
        bpy.data.scenes.new("Layout").collection.objects.link(obj)
        for users in obj.users_collection:
            if users != bpy.data.scenes["Layout"].collection:
                users.objects.unlink(obj)
    bpy.context.view_layer.update()


@pytest.mark.parametrize("how", ["disabled_in_viewports", "excluded_collection", "disabled_collection",
                                 "other_scene"])
@pytest.mark.parametrize("operator", ["solve", "bake", "build_rig"])
def test_a_target_blender_does_not_evaluate_is_refused(blender, how, operator):
    """A target Blender does not evaluate in this view layer keeps the matrix_world of its last evaluation. Solve
    posed the chain there, 15 cm from where the target was moved, and said the tip was on the target. Solve and Build
    Rig now refuse such a target, saying why and what to do, and change nothing; once the target is evaluated again,
    Solve reaches it. A bake reads this target from its own channels, not from what Blender evaluates (review 9), so
    it bakes, and the keys play on the target once it is evaluated again."""
    bpy = blender
    from mathutils import Vector
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    target = obj.blender_ik.chains[0].target
    _not_evaluated(bpy, target, how)
    target.location += Vector((-0.05, 0.1, 0.1))  # moved, say in the Sidebar
    bpy.context.view_layer.update()
    before = _scene_state(bpy, obj)
    if operator == "bake":
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=1) == {"FINISHED"}
    else:
        with pytest.raises(RuntimeError, match=f"The target '{target.name}' .*does not update where it is"):
            getattr(bpy.ops.blender_ik, operator)()
        assert _scene_state(bpy, obj) == before and obj.animation_data is None
    target.hide_viewport = False
    for users in list(target.users_collection):
        users.objects.unlink(target)
    bpy.context.scene.collection.objects.link(target)
    bpy.context.scene.frame_set(1)
    if operator != "bake":
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        bpy.context.view_layer.update()
    assert (obj.matrix_world @ obj.pose.bones["hand.L"].tail - target.matrix_basis.translation).length < 1e-5


def test_an_armature_disabled_in_viewports_is_refused_saying_why(blender):
    """Blender does not evaluate an armature disabled in viewports: its pose is not updated, so Solve's self-check
    refused it with "something in the scene changes the result", and Add Target and Place Pole put their Empties by
    its stale pose. They now say what is wrong."""
    bpy = blender
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.hide_viewport = True
    bpy.context.view_layer.update()
    before = _scene_state(bpy, obj)
    for operator in ("solve", "add_target", "place_pole"):
        with pytest.raises(RuntimeError, match="Armature 'Body' is disabled in viewports"):
            getattr(bpy.ops.blender_ik, operator)()
        assert _scene_state(bpy, obj) == before


@pytest.mark.parametrize("goal", ["target", "pole"])
def test_a_built_rig_whose_goal_was_deleted_is_shown_out_of_date(blender, goal):
    """Deleting a built chain's target (or pole) leaves the rig's constraints without a target: the rig solves nothing,
    yet the panel said "Rig built: Blender evaluates this chain by itself" (the rig's goals and the settings both
    pointed at nothing, so they matched). It says the rig is out of date now; Build Rig again then asks for the goal."""
    bpy = blender
    from rigs import add_empty
    from blender_ik_addon.ops import rig_state
    obj = build_body(bpy)
    _pose_mode(bpy, obj, {"hand.L"})
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    chain = obj.blender_ik.chains[0]
    chain.plane, chain.pole = "POLE", add_empty("Pole", (1.0, 1.0, 1.2))
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    assert rig_state(obj, chain) == "BUILT"
    bpy.data.objects.remove(getattr(chain, goal))
    bpy.context.view_layer.update()
    assert rig_state(obj, chain) == "STALE"
    assert any(text.startswith("Rig out of date") for text in _panel_labels(bpy, obj))
    with pytest.raises(RuntimeError, match=f"Set the {goal}"):
        bpy.ops.blender_ik.build_rig()
