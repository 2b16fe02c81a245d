"""Review 67: the last hour's changes, as an animator who undoes a lot and a TD who scripts would meet them."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import add_empty, arm_with_chain, build_rig_refused, hang_on_vertex
from test_review64 import _skin


def _hang_from_bone(bpy, obj, child, bone):
    """Parent ``child`` to ``bone`` of ``obj``, keeping where it is (as Ctrl+P > Bone does)."""
    bpy.context.view_layer.update()
    world = child.matrix_world.copy()
    child.parent, child.parent_type, child.parent_bone = obj, "BONE", bone
    bpy.context.view_layer.update()
    child.matrix_world = world


def _cuff(bpy, obj, how, bone):
    """The skin of test_review64 shaped by a lattice (not deformed by the arm) or hooked to an Empty, either hung from
    ``bone`` of the arm (a cuff). Returns the skin."""
    skin = _skin(bpy, obj, "lattice")
    skin.modifiers.clear()
    if how == "lattice":
        shaper = bpy.data.objects["Cage"]
        shaper.modifiers.clear()
        skin.modifiers.new("Lattice", "LATTICE").object = shaper
    else:
        shaper = add_empty("Cuff", location=(0.95, 0.35, 1.15))
        bpy.context.view_layer.update()
        hook = skin.modifiers.new("Hook", "HOOK")
        hook.object, hook.matrix_inverse = shaper, shaper.matrix_world.inverted()
        hook.vertex_indices_set([0, 1, 2, 3])
    _hang_from_bone(bpy, obj, shaper, bone)
    return skin


@pytest.mark.parametrize("how", ["lattice", "hook"])
@pytest.mark.parametrize("bone", ["b1", "b3"])
def test_build_rig_refuses_a_target_on_skin_shaped_by_a_cage_or_hook_on_a_chain_bone(blender, how, bone):
    """A rigger's cuff: skin shaped by a lattice, or hooked to an Empty, that is parented to a bone of the chain (the
    hand), and a prop hung from a vertex of it. Build Rig built the rig and said it was done while Blender reported a
    dependency cycle and showed the hand metres off the prop with the hook on the hand: only a lattice the armature
    deforms, or a hook on the armature itself, was followed. It is refused, naming the mesh, and nothing is added."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    hang_on_vertex(bpy, chain.target, _cuff(bpy, obj, how, bone))
    build_rig_refused(bpy, obj, "follows the geometry of 'Skin', which armature 'Arm' deforms")


@pytest.mark.parametrize("how", ["lattice", "hook"])
def test_build_rig_builds_with_skin_shaped_by_a_cage_on_a_bone_above_the_chain(blender, how):
    """The same cuff on the root, above the chain, makes no loop: built, and the hand on the prop."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    hang_on_vertex(bpy, target, _cuff(bpy, obj, how, "root"))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length < 1e-4
