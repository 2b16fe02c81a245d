"""Review 60: a studio's bone names with dots, quotes, brackets, backslashes and accents (``forearm.L``, ``arm "FK"``,
``hand"].x``, ``épaule\\``) in what the add-on tells the user and in what it finds by name."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest
from mathutils import Vector

from rigs import arm_and_chain_beside, arm_with_chain, tips_off
from scenes import add_bone
from test_chains import build_body, select_tips, tip_error

# A chain bone's (or the bone beside it's) studio name: a side suffix, quotes, what ends a name in a path, accents.
_NAMES = ["forearm.L", 'arm "FK"', 'hand"].x', "épaule\\"]


def _keyed_influence(constraint):
    """Keys ``constraint``'s influence off at frame 1 and on at frame 24, leaving it off."""
    for frame, influence in ((24, 1.0), (1, 0.0)):
        constraint.influence = influence
        constraint.keyframe_insert("influence", frame=frame)


@pytest.mark.parametrize("name", _NAMES)
@pytest.mark.parametrize("owner", ["chain bone", "bone below"])
def test_a_keyed_constraints_refusal_names_its_bone_and_constraint_as_they_are(blender, name, owner):
    """A constraint with keyed influence on the chain's middle bone, or an IK constraint on a bone below the chain that
    reaches into it: the bake is refused naming the bone and the constraint's property. The message cut the F-curve's
    path at its first dots and quotes: 'forearm.L' read 'L"].constraints["Keyed"].influence', and the IK's bone 'arm
    "FK"_grip' was named 'arm \\'."""
    bpy = blender
    obj, _ = arm_with_chain(bpy)
    if owner == "bone below":
        bpy.ops.object.mode_set(mode="EDIT")
        b3 = obj.data.edit_bones["b3"]
        add_bone(obj.data, "grip", b3.tail, b3.tail + (b3.tail - b3.head) * 0.5, b3, connect=True)
        bpy.ops.object.mode_set(mode="OBJECT")
        obj.data.bones["b2"].name = name
        bone = obj.pose.bones["grip"]
        bone.name = name + "_grip"
        constraint = obj.pose.bones[name + "_grip"].constraints.new("IK")
        constraint.target, constraint.chain_count = obj.blender_ik.chains[0].target, 3
        bone_name = name + "_grip"
    else:
        obj.data.bones["b2"].name = bone_name = name
        constraint = obj.pose.bones[name].constraints.new("COPY_ROTATION")
    constraint.name = 'Keyed "IK".001'
    _keyed_influence(constraint)
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=24)
    assert f"Bone '{bone_name}' has an animated" in str(refused.value)
    assert '(constraints["Keyed \\"IK\\".001"].influence)' in str(refused.value)


@pytest.mark.parametrize("prefix", ["x" * 50, "漢" * 17])
def test_two_long_named_chains_rigs_are_built_and_follow_their_targets(blender, prefix):
    """Both hands of a character whose bone names are long (50 letters, or 17 kanji: 51 bytes of Blender's 63) get a
    chain and a rig: the helper bones' names are cut to fit, the same for both hands, and Blender numbered the right
    hand's ('...-target.001') by cutting their role instead ('IKR-...-ta.001'): that rig was shown out of date ('Build
    Rig again') as soon as it was built, whatever Build Rig did. Each rig must be current and pose its hand on its
    target."""
    from blender_ik_addon import ops
    obj = build_body(bpy)
    for bone in list(obj.data.bones):
        bone.name = prefix + bone.name
    select_tips(bpy, obj, [prefix + "hand.L", prefix + "hand.R"])
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    chains = obj.blender_ik.chains
    assert [ops.rig_state(obj, chain) for chain in chains] == ["BUILT", "BUILT"]
    for chain in chains:
        chain.target.location += Vector((0.03, -0.05, 0.04))
    for chain in chains:
        distance, angle = tip_error(bpy, obj, chain.tip_bone, chain.target)
        assert distance < 1e-5 and angle < 1e-4, chain.name


@pytest.mark.parametrize("read, driven", [('fore"].arm', "P"), ("b2", 'spine"].x'), ('a"]', 'b"]')])
@pytest.mark.parametrize("how", ["solve", "bake"])
def test_a_driver_that_reads_one_chain_and_moves_another_is_followed_whatever_the_names(blender, read, driven, how):
    """Chain B hangs from bone P, whose Z rotation a driver takes from chain A's middle bone (a Single Property
    variable, its path naming the bone): A is solved first and B then reaches its target. With '"]' in the name of the
    bone read or of the bone driven, the path was cut at the escaped '\\"]' and named another bone: B was solved first,
    and Solve All and Bake All were refused ('Blender shows the tip of 'c3' 68.6 cm from where the solve put it')."""
    from blender_ik_addon.chain import bone_path
    obj, targets = arm_and_chain_beside(bpy)
    obj.data.bones["b2"].name, obj.data.bones["P"].name = read, driven
    obj.pose.bones[read].rotation_mode = obj.pose.bones[driven].rotation_mode = "XYZ"
    driver = obj.driver_add(bone_path(driven, "rotation_euler"), 2).driver
    variable = driver.variables.new()
    variable.type, variable.targets[0].id = "SINGLE_PROP", obj
    variable.targets[0].data_path = bone_path(read, "rotation_euler") + "[0]"
    driver.expression = variable.name
    obj.blender_ik.chains.move(1, 0)  # B first in the list: only the driver tells that A goes first
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    assert (bpy.ops.blender_ik.solve() if how == "solve" else bpy.ops.blender_ik.bake()) == {"FINISHED"}
    for frame in (1, 3) if how == "bake" else (scene.frame_current,):
        scene.frame_set(frame)
        assert max(tips_off(bpy, obj, targets)) < 1e-5
