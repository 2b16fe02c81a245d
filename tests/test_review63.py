"""Review 63: goals of every kind, as a layout artist or an animator picks whatever is in the shot: a prop, a camera,
a curve, a vertex of a mesh, an object under constraints."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import (add_empty, arm_with_chain, build_rig_refused, hang_on_vertex, pose_snapshot, prop_armature,
                  readout, skin_patch)


def _target_on_skin(bpy, obj, chain, how):
    """The chain's target made to follow the character's skin: a mesh the arm deforms (its vertices all weighted to the
    hand bone b3), the target hung from one of its vertices (a prop snapped to the hand) or shrinkwrapped onto it."""
    skin = skin_patch(bpy)
    skin.vertex_groups.new(name="b3").add([0, 1, 2, 3], 1.0, "REPLACE")
    skin.modifiers.new("Armature", "ARMATURE").object = obj
    target = add_empty("OnSkin", location=(0.9, 0.3, 1.0))
    if how == "vertex parent":
        hang_on_vertex(bpy, target, skin)
    else:
        target.constraints.new("SHRINKWRAP").target = skin
    chain.target = target
    bpy.context.view_layer.update()
    return target


def _tip_to_target(bpy, obj, target):
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length


@pytest.mark.parametrize("how", ["vertex parent", "shrinkwrap"])
@pytest.mark.parametrize("action", ["solve", "live", "bake"])
def test_a_target_on_the_skin_the_chain_deforms_is_refused(blender, how, action):
    """A target that follows the skin the chain deforms (hung from a vertex of the hand's mesh, or shrinkwrapped onto
    it) moves as soon as the hand does: Solve said 'the tip is on the target', Live showed the chain posed with no error,
    and the bake 'all in reach', while Blender showed the tip 62 cm from the target. Nothing the add-on traces (parents,
    constraints, drivers) links it to the chain: each must see the goal move once the pose is evaluated, put the pose
    (or the keys) back and say why."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = _target_on_skin(bpy, obj, chain, how)
    before = pose_snapshot(obj)
    if action == "live":
        chain.live = True
        bpy.context.view_layer.update()
        bpy.context.view_layer.update()
        assert readout(obj).status == "ERROR"
        message = readout(obj).message
    else:
        with pytest.raises(RuntimeError) as refused:
            if action == "solve":
                bpy.ops.blender_ik.solve(chains="ALL")
            else:
                bpy.ops.blender_ik.bake(frame_start=1, frame_end=5)
        message = str(refused.value)
        bpy.context.scene.frame_set(3)  # keys left behind would pose the chain here
    assert "The target 'OnSkin' moves when the chain is posed" in message
    assert "a mesh the armature deforms" in message
    assert pose_snapshot(obj) == before


@pytest.mark.parametrize("how", ["vertex parent", "shrinkwrap"])
def test_a_target_on_a_mesh_another_armature_deforms_is_followed(blender, how):
    """The same target on a mesh that another armature (a prop's rig) deforms does not move with the chain: it is solved
    and Blender shows the tip on it."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = _target_on_skin(bpy, prop_armature(bpy), chain, how)
    assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    assert _tip_to_target(bpy, obj, target) < 1e-5


@pytest.mark.parametrize("how", ["vertex parent", "shrinkwrap"])
@pytest.mark.parametrize("deformer", ["the chain's armature", "another armature"])
def test_build_rig_refuses_a_target_on_the_skin_its_armature_deforms(blender, how, deformer):
    """Built on a target that follows the skin its own armature deforms, the rig loops through Blender's dependency graph
    (the pose deforms the mesh, which places the target, which poses the chain): Blender reports a cycle and evaluates
    it in no fixed order, so the rig passed its check or not by luck of that order (review 63). Build Rig refuses it,
    naming the mesh, and adds nothing; on a mesh another armature deforms it builds, and the hand follows the target."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = _target_on_skin(bpy, obj if deformer == "the chain's armature" else prop_armature(bpy), chain, how)
    if deformer == "another armature":
        assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
        assert _tip_to_target(bpy, obj, target) < 1e-5
        return
    build_rig_refused(bpy, obj, "follows the geometry of 'Skin', which armature 'Arm' deforms")
