"""Review 64: the goals read again once Blender shows the pose (chain.verify_goals), Build Rig's refusal of goals on
deformed geometry, the per-frame sweep through simulations; as an animator, a rigger and a TD would meet them."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import arm_with_chain, build_rig_refused, hang_on_vertex, skin_patch


def _skin(bpy, obj, how):
    """A patch of the character's skin (a mesh), deformed by the arm's hand bone b3 through a lattice the arm deforms, or
    through a Hook modifier on b3 (a rigger's hooks for a cuff)."""
    skin = skin_patch(bpy)
    if how == "lattice":
        lattice = bpy.data.objects.new("Cage", bpy.data.lattices.new("Cage"))
        bpy.context.scene.collection.objects.link(lattice)
        lattice.location, lattice.scale = (0.95, 0.35, 1.15), (0.5, 0.5, 0.5)
        lattice.vertex_groups.new(name="b3").add(list(range(8)), 1.0, "REPLACE")
        lattice.modifiers.new("Armature", "ARMATURE").object = obj
        skin.modifiers.new("Lattice", "LATTICE").object = lattice
    else:
        hook = skin.modifiers.new("Hook", "HOOK")
        hook.object, hook.subtarget = obj, "b3"
        hook.vertex_indices_set([0, 1, 2, 3])
    return skin


@pytest.mark.parametrize("how", ["lattice", "hook"])
def test_build_rig_refuses_a_target_on_skin_a_lattice_or_hook_of_its_armature_deforms(blender, how):
    """A rigger's prop hung from a vertex of skin the arm shapes through a lattice (or a Hook modifier on the hand): Build
    Rig built a rig that loops through Blender's dependency graph and said it was done, while Blender showed the hand 0.9
    cm (2.3 cm with the hook) off the target; the rig's refusal of a goal on skin its armature deforms looked only for an
    Armature modifier on the mesh itself. It is refused, naming the mesh, and nothing is added."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    hang_on_vertex(bpy, chain.target, _skin(bpy, obj, how))
    build_rig_refused(bpy, obj, "follows the geometry of 'Skin', which armature 'Arm' deforms")
