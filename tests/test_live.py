"""Live mode: follows the target, the pole, the armature and the frame; no feedback loop; survives reload."""
import numpy as np
import pytest

from rigs import add_empty, angle_between, axis_of, build_arm, readout, tip_and_direction


def live_rig(bpy):
    obj = build_arm()
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b3"
    obj.blender_ik.target = target
    bpy.context.view_layer.update()
    return obj, target


def on_target(obj, target):
    tip, direction = tip_and_direction(obj)
    return (np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 2e-5
            and angle_between(direction, axis_of(target)) < 2e-5)


def test_turning_live_on_solves_and_moving_the_target_follows(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    assert not on_target(obj, target)
    obj.blender_ik.live = True
    assert on_target(obj, target)
    target.location = (0.5, -0.6, 1.3)
    target.rotation_euler = (1.0, 0.2, -0.3)
    bpy.context.view_layer.update()  # depsgraph_update_post fires here, not on the assignment
    assert on_target(obj, target)
    obj.location = (0.3, 0.2, -0.1)  # the armature moves: the chain follows in world space
    bpy.context.view_layer.update()
    assert on_target(obj, target)


def test_frame_changes_follow_an_animated_target(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    scene = bpy.context.scene
    target.location = (0.9, 0.3, 1.1)
    target.keyframe_insert("location", frame=1)
    target.location = (0.2, -0.8, 1.0)
    target.keyframe_insert("location", frame=20)
    obj.blender_ik.live = True
    for frame in (1, 7, 13, 20):
        scene.frame_set(frame)
        assert on_target(obj, target), frame


def test_no_feedback_loop_and_no_work_when_nothing_moved(blender, monkeypatch):
    bpy = blender
    from blender_ik_addon import live
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    calls = []
    original = live.solve_current
    monkeypatch.setattr(live, "solve_current", lambda *a, **k: calls.append(1) or original(*a, **k))
    for _ in range(5):  # posing tags the armature; the updates that follow find nothing to do
        bpy.context.view_layer.update()
    assert calls == []
    target.location.x += 0.1
    for _ in range(5):
        bpy.context.view_layer.update()
    assert calls == [1]
    assert on_target(obj, target)
    del live


def test_pole_moves_are_followed(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    pole = add_empty("Pole", location=(0.0, 2.0, 1.0))
    obj.blender_ik.plane = "POLE"
    obj.blender_ik.pole = pole
    obj.blender_ik.live = True
    before = np.array(obj.pose.bones["b2"].head)
    pole.location = (0.0, -2.0, 1.0)
    bpy.context.view_layer.update()
    after = np.array(obj.pose.bones["b2"].head)
    assert np.linalg.norm(after - before) > 0.1 and on_target(obj, target)


def test_turning_live_off_leaves_the_pose(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    posed = [tuple(pb.rotation_quaternion) for pb in obj.pose.bones]
    obj.blender_ik.live = False
    assert [tuple(pb.rotation_quaternion) for pb in obj.pose.bones] == posed
    target.location = (0.1, 0.1, 1.5)
    bpy.context.view_layer.update()
    assert [tuple(pb.rotation_quaternion) for pb in obj.pose.bones] == posed


def test_errors_in_live_mode_are_shown_not_raised(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    target.scale = (1.0, 1.0, 0.0)
    bpy.context.view_layer.update()
    assert readout(obj).status == "ERROR" and "zero scale" in readout(obj).message


def test_live_survives_save_and_reload(blender, tmp_path):
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    path = str(tmp_path / "live.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    assert obj.blender_ik.live
    target.location = (0.4, 0.7, 1.2)
    bpy.context.view_layer.update()
    assert on_target(obj, target)


def test_unregister_removes_every_handler(blender):
    bpy = blender
    import blender_ik_addon
    from blender_ik_addon import live
    handlers = (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.frame_change_post,
                bpy.app.handlers.load_post)
    assert live.on_depsgraph_update in handlers[0]
    blender_ik_addon.unregister()
    try:
        assert not any(h.__module__.startswith("blender_ik_addon") for hs in handlers for h in hs)
    finally:
        blender_ik_addon.register()


def test_register_touches_no_blend_data(blender, monkeypatch):
    """Blender registers add-ons with bpy.data restricted (addon_utils' RestrictBlend)."""
    bpy = blender
    import blender_ik_addon
    blender_ik_addon.unregister()

    class Restricted:
        def __getattr__(self, name):
            raise AttributeError(f"bpy.data.{name} is not available while add-ons register")

    data = bpy.data
    monkeypatch.setattr(bpy, "data", Restricted())
    try:
        blender_ik_addon.register()
    finally:
        monkeypatch.setattr(bpy, "data", data)
    obj, target = live_rig(bpy)  # and live mode still works afterwards
    obj.blender_ik.live = True
    target.location.x -= 0.2
    bpy.context.view_layer.update()
    assert on_target(obj, target)


def test_renamed_and_duplicated_armatures_keep_following(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    obj.name = "Renamed"
    target.location = (0.5, 0.5, 1.2)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert on_target(obj, target)
    copy = obj.copy()
    bpy.context.scene.collection.objects.link(copy)
    copy.location = (0.2, 0.1, 0.0)
    bpy.context.view_layer.update()
    target.location = (0.6, 0.2, 1.3)
    bpy.context.view_layer.update()
    assert on_target(obj, target) and on_target(copy, target)


def test_an_error_clears_the_read_out_and_fixing_it_retries(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    assert readout(obj).status == "REACHED"
    obj.pose.bones["b2"].scale = (1.0, 2.0, 1.0)
    bpy.context.view_layer.update()
    assert readout(obj).status == "ERROR" and "unit pose scale" in readout(obj).message
    obj.pose.bones["b2"].scale = (1.0, 1.0, 1.0)  # the fix alone, nothing else moves
    bpy.context.view_layer.update()
    assert readout(obj).status == "REACHED" and readout(obj).message == ""
    assert on_target(obj, target)


def test_live_pins_the_tip_bone(blender):
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.tip_bone = ""
    obj.data.bones.active = obj.data.bones["b3"]
    obj.blender_ik.live = True
    assert obj.blender_ik.tip_bone == "b3"


def _add_copy_rotation(bpy, obj):
    constraint = obj.pose.bones["b2"].constraints.new("COPY_ROTATION")
    constraint.target = obj
    return constraint


def _move_parent_object(bpy, obj):
    parent = bpy.data.objects.new("Holder", None)
    bpy.context.scene.collection.objects.link(parent)
    obj.parent = parent
    bpy.context.view_layer.update()
    parent.location = (0.4, -0.3, 0.2)  # only the parent is tagged; the armature moves through it
    parent.rotation_euler = (0.3, 0.0, 0.5)


def _turn_root_bone(bpy, obj):
    obj.pose.bones["root"].rotation_mode = "XYZ"
    obj.pose.bones["root"].rotation_euler = (0.2, -0.3, 0.4)


@pytest.mark.parametrize("change", [_move_parent_object, _turn_root_bone])
def test_what_moves_the_armature_without_touching_the_target_is_followed(blender, change):
    """Live reuses what it read of the armature while a depsgraph update lists neither it nor its data; a move
    that reaches the armature through a parent, or a turn of the chain's parent bone, lists it."""
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    target.location = (0.5, -0.6, 1.3)
    bpy.context.view_layer.update()
    assert on_target(obj, target)
    change(bpy, obj)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert on_target(obj, target)


def test_a_change_made_while_live_was_paused_is_seen_at_the_next_update(blender):
    """An operator's change is evaluated inside its paused section, so the next update does not list the
    armature: Live must still re-read it (here: a constraint added to a chain bone is refused)."""
    bpy = blender
    from blender_ik_addon import runtime
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    assert readout(obj).status == "REACHED"
    with runtime.paused():
        _add_copy_rotation(bpy, obj)
        bpy.context.view_layer.update()
    target.location = (0.5, -0.6, 1.3)
    bpy.context.view_layer.update()
    status = readout(obj)
    assert status.status == "ERROR" and "constraints" in status.message, status


@pytest.mark.parametrize("flag, value", [("use_local_location", False), ("inherit_scale", "NONE")])
def test_a_first_bone_flag_changed_under_a_posed_parent_moves_the_chain_to_its_new_base(blender, flag, value):
    """The first bone's inheritance flags decide where the chain hangs from its posed parent. Live keeps the base it
    computed while the chain is validated and the parent stays put: a flag changed must re-validate, and the base be
    computed again, for the tip to stay on its target."""
    bpy = blender
    from mathutils import Quaternion

    obj = build_arm(connected=False, directions=[(0.6, 0.0, 0.8), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)])
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone, obj.blender_ik.target = "b3", target
    root = obj.pose.bones["root"]
    root.rotation_quaternion = Quaternion((0.3, 0.5, 0.2), 0.7)
    root.scale = (1.2, 1.2, 1.2)
    obj.pose.bones["b1"].location = (0.05, 0.1, 0.0)
    bpy.context.view_layer.update()
    obj.blender_ik.live = True
    assert on_target(obj, target)
    before = np.array(obj.pose.bones["b1"].tail)
    setattr(obj.data.bones["b1"], flag, value)
    bpy.context.view_layer.update()
    assert np.linalg.norm(np.array(obj.pose.bones["b1"].tail) - before) > 1e-3  # the base moved (or scaled)
    assert on_target(obj, target)


@pytest.mark.parametrize("how", ["solve", "live"])
def test_what_follows_the_posed_chain_is_evaluated_with_it(blender, how):
    """Solve and Live write the rotations in bulk and ask Blender for a transform update of the armature (cheaper than
    the geometry update a rotation property's setter asks for). Everything that follows the chain must still be
    evaluated with the new pose: drivers reading a bone's rotation property or its transform, a constraint following
    the tip, a mesh the bones deform. Judged against a full re-evaluation."""
    bpy = blender
    obj, target = live_rig(bpy)
    prop_driven, transform_driven, follower = add_empty("Prop"), add_empty("Transform"), add_empty("Follower")
    driver = prop_driven.driver_add("location", 0).driver
    driver.type = "SUM"
    variable = driver.variables.new()
    variable.type, variable.targets[0].id = "SINGLE_PROP", obj
    variable.targets[0].data_path = 'pose.bones["b2"].rotation_quaternion[1]'
    driver = transform_driven.driver_add("location", 0).driver
    driver.type = "SUM"
    variable = driver.variables.new()
    variable.type = "TRANSFORMS"
    target_settings = variable.targets[0]
    target_settings.id, target_settings.bone_target, target_settings.transform_type = obj, "b2", "ROT_Y"
    constraint = follower.constraints.new("COPY_LOCATION")
    constraint.target, constraint.subtarget, constraint.head_tail = obj, "b3", 1.0
    mesh = bpy.data.meshes.new("Cube")
    mesh.from_pydata([(0.8, 0.0, 1.2), (0.9, 0.1, 1.2), (0.8, 0.1, 1.3)], [], [(0, 1, 2)])
    cube = bpy.data.objects.new("Cube", mesh)
    bpy.context.scene.collection.objects.link(cube)
    cube.vertex_groups.new(name="b3").add([0, 1, 2], 1.0, "REPLACE")
    cube.modifiers.new("Armature", "ARMATURE").object = obj
    bpy.context.view_layer.update()

    def state():
        depsgraph = bpy.context.evaluated_depsgraph_get()
        vertices = cube.evaluated_get(depsgraph).data.vertices
        return np.array([prop_driven.matrix_world.translation.x, transform_driven.matrix_world.translation.x,
                         *follower.matrix_world.translation, *(c for v in vertices for c in v.co)])

    before = state()
    if how == "solve":
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    else:
        obj.blender_ik.live = True
        target.location.x -= 0.05
        bpy.context.view_layer.update()
    assert on_target(obj, target)
    shown = state()
    for thing in (obj, prop_driven, transform_driven, follower, cube):
        thing.update_tag(refresh={"OBJECT", "DATA"})
    bpy.context.view_layer.update()
    assert np.abs(shown - before).max() > 1e-2  # the dependents moved with the chain
    np.testing.assert_allclose(shown, state(), rtol=0, atol=1e-6)


def test_live_solves_the_armatures_of_the_scene_being_updated_only(blender):
    """Live finds its armatures through the view layer being evaluated (a hashed lookup: looking a name up in
    bpy.data or scene.objects goes object by object, which a big scene paid on every update). An armature of another
    scene is left alone by this scene's updates; one in an excluded collection of this scene is still looked at (and
    refused: Blender does not evaluate it), as before."""
    bpy = blender
    obj, target = live_rig(bpy)
    obj.blender_ik.live = True
    assert on_target(obj, target)
    other_scene = bpy.data.scenes.new("Other")
    other = build_arm(name="OtherArm")
    other_target = add_empty("OtherTarget", location=(0.8, 0.2, 1.0))
    for thing in (other, other_target):
        bpy.context.scene.collection.objects.unlink(thing)
        other_scene.collection.objects.link(thing)
    other.blender_ik.tip_bone, other.blender_ik.target = "b3", other_target
    other.blender_ik.live = True
    before = [tuple(pose_bone.rotation_quaternion) for pose_bone in other.pose.bones]
    target.location.x -= 0.05
    bpy.context.view_layer.update()
    assert on_target(obj, target)
    assert [tuple(pose_bone.rotation_quaternion) for pose_bone in other.pose.bones] == before

    excluded = bpy.data.collections.new("Excluded")
    bpy.context.scene.collection.children.link(excluded)
    excluded.objects.link(obj)
    bpy.context.scene.collection.objects.unlink(obj)
    bpy.context.view_layer.layer_collection.children["Excluded"].exclude = True
    target.location.x += 0.05
    bpy.context.view_layer.update()
    assert readout(obj).status == "ERROR" and "does not evaluate" in readout(obj).message


@pytest.mark.parametrize("disabled", ["collection", "armature"])
def test_an_armature_disabled_in_viewports_is_refused_as_solve_refuses_it_and_followed_again(blender, disabled):
    """Disabled in viewports (its own screen icon, or its collection's), an armature stays in the view layer but Blender
    evaluates none of it. Live posed it anyway and its self-check blamed "something in the scene", where Solve names
    the cause; it now says what Solve says, and follows again once the armature is enabled."""
    bpy = blender
    from rigs import arm_with_chain, tips_off
    obj, chain = arm_with_chain(bpy)
    collection = bpy.data.collections.new("Props")
    bpy.context.scene.collection.children.link(collection)
    collection.objects.link(obj)
    bpy.context.scene.collection.objects.unlink(obj)
    obj.blender_ik.live = True
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-6
    switch = (collection, "hide_viewport") if disabled == "collection" else (obj, "hide_viewport")
    setattr(*switch, True)
    bpy.context.view_layer.update()
    chain.target.location.x += 0.1
    bpy.context.view_layer.update()
    assert readout(obj).status == "ERROR"
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.blender_ik.solve()
    message = str(refused.value).split("Chain 'arm': ", 1)[1].strip()
    assert readout(obj).message == message and "so Blender does not evaluate it here" in message
    setattr(*switch, False)
    bpy.context.view_layer.update()
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-6 and readout(obj).status == "REACHED"


@pytest.mark.parametrize("setting", ["target", "up_axis", "roll_axis", "plane", "target_bone", "not live"])
def test_a_scripts_change_of_a_live_chains_setting_is_followed(blender, setting):
    """The panel's edits make Blender update the armature, a script's do not (Blender tags an ID for a property edited in
    the UI only): a script that retargeted a live chain, or changed its up axis, left it where it was, 0.81 from its new
    target, until something else moved. A setting Live reads now asks for that update itself, for a live chain."""
    bpy = blender
    from rigs import angle_between, arm_with_chain, axis_of, tip_and_direction, tips_off
    obj, chain = arm_with_chain(bpy)
    other = add_empty("Other", location=(0.5, -0.4, 1.2), rotation=(0.3, 0.1, 0.2))
    pole = add_empty("Pole", location=(0.4, -2.0, 0.5))
    rig = build_arm()
    rig.location = other.location - rig.data.bones["b3"].head_local  # its b3's head where 'Other' is, in reach
    chain.live = setting != "not live"
    bpy.context.view_layer.update()
    before = tip_and_direction(obj)[0]  # from here on, the setting is the one change
    goal, axis = other, "Z"
    if setting in ("target", "not live"):
        chain.target = other
    elif setting == "up_axis":
        chain.up_axis, goal, axis = "X", chain.target, "X"
    elif setting == "roll_axis":  # the last bone's local Z turns toward the target's X: its roll, read from its matrix
        chain.roll_axis, goal = "X", chain.target
    elif setting == "plane":  # the middle joint bends toward the pole
        chain.pole, chain.plane, goal = pole, "POLE", chain.target
    else:  # a control bone of another armature
        chain.target, chain.target_bone = rig, "b3"
    bpy.context.view_layer.update()  # what a script's next step, or the viewport, does
    tip, direction = tip_and_direction(obj)
    if setting == "not live":  # nothing follows a chain that is not live
        assert (tip == before).all()
        return
    if setting == "target_bone":
        head = rig.matrix_world @ rig.pose.bones["b3"].head
        assert np.linalg.norm(tip - np.array(head)) < 1e-5
        return
    assert tips_off(bpy, obj, [goal], ("b3",))[0] < 1e-5
    assert angle_between(direction, axis_of(goal, axis)) < 2e-5
    if setting == "roll_axis":
        z = np.array((obj.matrix_world @ obj.pose.bones["b3"].matrix).to_3x3().col[2])
        assert abs(float(np.dot(z / np.linalg.norm(z), axis_of(goal, "X")))) > 0.999
    if setting == "plane":
        middle = np.array(obj.matrix_world @ obj.pose.bones["b2"].head)
        assert middle[1] < -0.1  # toward the pole, off the plane it bent in


def _hang_target_on_hand(bpy, obj, target):
    """B's target parented to the arm's tip bone, where it is."""
    world = target.matrix_world.copy()
    target.parent, target.parent_type, target.parent_bone = obj, "BONE", "b3"
    bpy.context.view_layer.update()
    target.matrix_world = world


def _pin_target_to_hand(bpy, obj, target):
    """A Child Of on B's target, to the arm's tip bone, set where the target is."""
    constraint = target.constraints.new("CHILD_OF")
    constraint.target, constraint.subtarget = obj, "b3"
    bpy.context.view_layer.update()
    constraint.inverse_matrix = (obj.matrix_world @ obj.pose.bones["b3"].matrix).inverted()


def _hang_chain_on_hand(bpy, obj, target):
    """B's bones re-parented (in Edit Mode) below the arm's tip bone: B's own bones and goals stay as they were."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["P"].parent = obj.data.edit_bones["b3"]
    bpy.ops.object.mode_set(mode="OBJECT")


def _pin_parent_to_hand(bpy, obj, target):
    """A Child Of on the bone B hangs from (no bone of B's own), to the arm's tip bone, set where the bone is: nothing
    moves until the arm does."""
    constraint = obj.pose.bones["P"].constraints.new("CHILD_OF")
    constraint.target, constraint.subtarget = obj, "b3"
    constraint.inverse_matrix = (obj.matrix_world @ obj.pose.bones["b3"].matrix).inverted()


@pytest.mark.parametrize("couple", [_hang_target_on_hand, _pin_target_to_hand, _hang_chain_on_hand,
                                    _pin_parent_to_hand])
@pytest.mark.parametrize("together", [False, True])
def test_a_chain_coupled_to_the_dragged_one_mid_drag_follows_it(blender, couple, together):
    """Live keeps which idle chains a dragged chain moves from one update to the next (issue 11): a chain made to follow
    the dragged one in the middle of the drag (its target hung on the dragged hand or pinned to it by a Child Of, its
    bones re-parented below it in Edit Mode, the bone it hangs from pinned to it) must be solved with it from then on,
    as Blender shows both."""
    bpy = blender
    from rigs import arm_and_chain_beside, tips_off
    obj, targets = arm_and_chain_beside(bpy)
    for chain in obj.blender_ik.chains:
        chain.live = True
    bpy.context.view_layer.update()
    for _ in range(3):  # the drag: B does not follow A yet
        targets[0].location.x -= 0.02
        bpy.context.view_layer.update()
    assert max(tips_off(bpy, obj, targets)) < 1e-5
    for step in range(4):
        if step == 0:  # coupled in the update that moves the arm's target too (a script), or in one of its own
            couple(bpy, obj, targets[1])
            if together:
                targets[0].location.x -= 0.02
            bpy.context.view_layer.update()
        targets[0].location.x -= 0.02
        targets[0].location.z += 0.01
        bpy.context.view_layer.update()
        off = tips_off(bpy, obj, targets)
        assert max(off) < 1e-5, (step, off, readout(obj, "B"))
        assert readout(obj, "B").status == "REACHED"


def test_a_chain_a_keyed_constraint_couples_to_the_dragged_one_at_another_frame_follows_it(blender):
    """Which idle chains a dragged chain moves is kept from one update to the next only where no constraint or driver
    is read: a Child Of on the bone B hangs from, to the arm's tip bone, keyed off at frame 1 and on at frame 2, couples
    B to the arm from frame 2 on, with no setting changed; dragging the arm there must solve B with it."""
    bpy = blender
    from rigs import arm_and_chain_beside, tips_off
    obj, targets = arm_and_chain_beside(bpy)
    constraint = obj.pose.bones["P"].constraints.new("CHILD_OF")
    constraint.target, constraint.subtarget = obj, "b3"
    for frame, influence in ((1, 0.0), (2, 1.0)):
        constraint.influence = influence
        constraint.keyframe_insert("influence", frame=frame)
    bpy.context.scene.frame_set(1)
    for chain in obj.blender_ik.chains:
        chain.live = True
    bpy.context.view_layer.update()
    for _ in range(3):  # B does not follow A at frame 1
        targets[0].location.x -= 0.02
        bpy.context.view_layer.update()
    assert max(tips_off(bpy, obj, targets)) < 1e-5
    bpy.context.scene.frame_set(2)
    for step in range(3):
        targets[0].location.x -= 0.02
        targets[0].location.z += 0.01
        bpy.context.view_layer.update()
        off = tips_off(bpy, obj, targets)
        assert max(off) < 1e-5, (step, off, readout(obj, "B"))
