"""Review 60: a studio's bone names with dots, quotes, brackets, backslashes and accents (``forearm.L``, ``arm "FK"``,
``hand"].x``, ``épaule\\``) in what the add-on tells the user and in what it finds by name."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest
from mathutils import Vector

from rigs import arm_with_chain
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
