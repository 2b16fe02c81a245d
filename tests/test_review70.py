"""Review 70: a skinned character end to end, as a character TD delivering a rig and an animator using it: props and
controls on the character's skin, Build Rig's refusal of goals that follow geometry its armature deforms."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import add_empty, arm_with_chain, skin_patch
from scenes import add_bone


def _chest(bpy, deformer):
    """A patch of the character's chest (a mesh) that ``deformer`` deforms, its vertices all weighted to its bone 'root'
    (outside the chain b1 > b2 > b3)."""
    chest = skin_patch(bpy, "Chest")
    chest.vertex_groups.new(name="root").add([0, 1, 2, 3], 1.0, "REPLACE")
    chest.modifiers.new("Armature", "ARMATURE").object = deformer
    return chest


def _control_on(bpy, rig, chest, constraint, owner):
    """A control bone 'ctrl' of ``rig`` (under a bone 'hold'), placed on ``chest`` by ``constraint`` on the control
    (``owner`` "control") or on 'hold' ("parent"): a hand control a TD pins to the chest."""
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    hold = add_bone(rig.data, "hold", (0.9, 0.3, 0.9), (0.9, 0.3, 1.0))
    add_bone(rig.data, "ctrl", (0.9, 0.3, 1.0), (0.9, 0.3, 1.1), hold)
    bpy.ops.object.mode_set(mode="OBJECT")
    pinned = rig.pose.bones["ctrl" if owner == "control" else "hold"]
    pinned_constraint = pinned.constraints.new(constraint)
    pinned_constraint.target = chest
    if constraint != "SHRINKWRAP":
        pinned_constraint.subtarget = "root"  # the vertex group
    bpy.context.view_layer.update()


@pytest.mark.parametrize("constraint", ["COPY_LOCATION", "SHRINKWRAP", "CHILD_OF"])
@pytest.mark.parametrize("owner", ["control", "parent"])
@pytest.mark.parametrize("rig", ["the chain's armature", "a control rig"])
def test_build_rig_refuses_a_target_bone_that_follows_the_skin_its_armature_deforms(blender, constraint, owner, rig):
    """A TD pins a hand control bone (of the character's armature, or of a separate control rig) to the chest's skin
    by a constraint on the bone or on the bone it hangs from (Copy Location or Child Of to a vertex group, Shrinkwrap),
    and builds the arm's rig on it. Build Rig built it and said it was done while Blender reported dependency cycles
    (the pose deforms the skin, which places the control, which poses the chain: evaluated in no fixed order; a Child
    Of left the hand 83 cm off the control on Rigify's metarig): it followed the constraints of objects only, not of
    the target bone and the bones above it. It is refused, naming the bone and the mesh, and nothing is added."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chest = _chest(bpy, obj)
    controls = obj
    if rig == "a control rig":
        controls = bpy.data.objects.new("Controls", bpy.data.armatures.new("Controls"))
        bpy.context.scene.collection.objects.link(controls)
    _control_on(bpy, controls, chest, constraint, owner)
    bpy.context.view_layer.objects.active = obj
    chain.target, chain.target_bone = controls, "ctrl"
    bones = set(obj.data.bones.keys())
    with pytest.raises(RuntimeError, match=f"The target '{controls.name}' bone 'ctrl' follows the geometry of "
                                           "'Chest', which armature 'Arm' deforms"):
        bpy.ops.blender_ik.build_rig(chains="ALL")
    assert set(obj.data.bones.keys()) == bones
    assert sum(len(pose_bone.constraints) for pose_bone in obj.pose.bones) == (controls == obj)  # the pin's alone


@pytest.mark.parametrize("constraint", ["COPY_LOCATION", "SHRINKWRAP"])
def test_build_rig_builds_on_a_target_bone_that_follows_a_mesh_another_armature_deforms(blender, constraint):
    """The same control pinned to a mesh that another armature deforms makes no loop: built, and the hand on it."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    other = bpy.data.objects.new("Other", bpy.data.armatures.new("Other"))
    bpy.context.scene.collection.objects.link(other)
    bpy.context.view_layer.objects.active = other
    bpy.ops.object.mode_set(mode="EDIT")
    add_bone(other.data, "root", (0.9, 0.3, 0.5), (0.9, 0.3, 1.1))
    bpy.ops.object.mode_set(mode="OBJECT")
    _control_on(bpy, obj, _chest(bpy, other), constraint, "control")
    bpy.context.view_layer.objects.active = obj
    chain.target, chain.target_bone = obj, "ctrl"
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert (obj.pose.bones["b3"].tail - obj.pose.bones["ctrl"].head).length < 1e-5


@pytest.mark.parametrize("constraint", ["CHILD_OF", "COPY_TRANSFORMS"])
@pytest.mark.parametrize("via", ["target", "its parent", "a bone"])
def test_build_rig_refuses_a_target_that_follows_a_prop_on_the_skin(blender, constraint, via):
    """A cup hung from vertices of the chest's skin, and the hand's target made to follow the cup by a Child Of or a
    Copy Transforms on the target, on an Empty it hangs from, or on a bone of a control rig it hangs from. Build Rig built
    it and said it was done while Blender reported 22 dependency cycles on Rigify's metarig: it followed the geometry
    the target's own constraints read, not what their targets follow. It is refused, naming the mesh, adding nothing;
    the same cup on a mesh another armature deforms builds, and the hand is on the target."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chest = _chest(bpy, obj)
    cup = add_empty("Cup")
    cup.parent, cup.parent_type = chest, "VERTEX"
    cup.parent_vertices[0] = 1
    target = chain.target
    target.location = (0.0, 0.0, 0.0)  # at the cup
    follower = target
    if via == "its parent":
        follower = target.parent = add_empty("Holder")
    elif via == "a bone":
        controls = bpy.data.objects.new("Controls", bpy.data.armatures.new("Controls"))
        bpy.context.scene.collection.objects.link(controls)
        bpy.context.view_layer.objects.active = controls
        bpy.ops.object.mode_set(mode="EDIT")
        add_bone(controls.data, "hold", (0.0, -0.1, 0.0), (0.0, 0.0, 0.0))
        bpy.ops.object.mode_set(mode="OBJECT")
        target.parent, target.parent_type, target.parent_bone = controls, "BONE", "hold"
        target.location = (0.0, -0.1, 0.0)  # by the cup
        follower = controls.pose.bones["hold"]
    follow = follower.constraints.new(constraint)
    follow.target = cup
    if constraint == "CHILD_OF":
        follow.set_inverse_pending = False
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    bones = set(obj.data.bones.keys())
    with pytest.raises(RuntimeError, match="The target 'Target' follows the geometry of 'Chest', which armature 'Arm' "
                                           "deforms"):
        bpy.ops.blender_ik.build_rig(chains="ALL")
    assert set(obj.data.bones.keys()) == bones
    assert not any(len(pose_bone.constraints) for pose_bone in obj.pose.bones)
    chest.modifiers["Armature"].object = bpy.data.objects.new("Other", bpy.data.armatures.new("Other"))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length < 1e-5
