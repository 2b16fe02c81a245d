"""Review 79: a rigger and an animator whose character's props and cuffs are deformed by the rig, the cuff shaped
through a handle, a cage or an Armature modifier, with poles, steps, samples and scripts."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import add_empty, arm_and_chain_beside, hang_on_vertex, key_x, skin_patch, tips_off


def hang_on_handled_cuff(bpy, obj, goal, how, bone="b3"):
    """Hang ``goal`` from vertex 1 of a skin patch (rigs.skin_patch) hooked to an Empty, a rigger's handle, that
    follows ``bone`` of ``obj``: parented to it (``how`` "parented") or pinned to it by a Child Of ("child of");
    nothing moves yet. Returns the skin."""
    from mathutils import Vector
    skin = skin_patch(bpy)
    skin.location = goal.matrix_world.translation - Vector(skin.data.vertices[1].co)
    handle = add_empty("Handle")
    if how == "parented":
        handle.parent, handle.parent_type, handle.parent_bone = obj, "BONE", bone
    else:
        constraint = handle.constraints.new("CHILD_OF")
        constraint.target, constraint.subtarget = obj, bone
    bpy.context.view_layer.update()
    hook = skin.modifiers.new("Hook", "HOOK")
    hook.object, hook.matrix_inverse = handle, handle.matrix_world.inverted() @ skin.matrix_world
    hook.vertex_indices_set([0, 1, 2, 3])
    hang_on_vertex(bpy, goal, skin)
    return skin


@pytest.mark.parametrize("how", ["parented", "child of"])
@pytest.mark.parametrize("current", [1, 10])
def test_bake_all_after_solve_all_plays_a_chain_on_a_cuff_hooked_to_a_handle_on_the_other_hand(blender, how,
                                                                                                current):
    """B's target hangs from a cuff whose Hook is on an Empty that follows A's hand (parented to b3, or pinned to it
    by a Child Of), the usual way of rigging a hook: after Solve All, Bake All reported "all in reach" while B played
    up to 17 cm off its target on the other frames. Only a Hook on the armature itself (or a cage it deforms) was taken
    for geometry the other chain's pose moves, so B was baked on A's old pose, and the self-check's one frame, where
    A's new keys are its solved pose, showed nothing."""
    bpy = blender
    obj, targets = arm_and_chain_beside(bpy)
    obj.blender_ik.active_chain_index = obj.blender_ik.chains.find("A")
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    hang_on_handled_cuff(bpy, obj, targets[1], how)
    key_x(targets[0], ((1, 0.9), (10, 0.7)))
    bpy.context.scene.frame_set(current)
    assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    moved = []
    for frame in range(1, 11):
        bpy.context.scene.frame_set(frame)
        off = tips_off(bpy, obj, targets)
        assert max(off) < 1e-5, (frame, off)
        moved.append(targets[1].matrix_world.translation.copy())
    assert (moved[0] - moved[-1]).length > 0.05  # the cuff carried B's target


@pytest.mark.parametrize("how", ["hook", "parented"], ids=["hooked to the hand", "hooked to a handle on it"])
def test_bake_active_of_the_hand_names_the_chain_on_its_cuff_it_leaves_off(blender, how):
    """Both chains baked, the animator re-times A's target and bakes A alone (Bake Active): A's new keys carry the cuff
    away and B's keys, solved on A's old pose, play up to 21 cm off B's target. The report said "all in reach" and
    nothing of B, as it names a chain whose target A's hand holds (review 52): a goal on geometry A's pose moves was
    not counted. It now names B."""
    from blender_ik_addon.ops import bake_armature
    from rigs import beside_on_cuff
    bpy = blender
    if how == "hook":
        obj, targets = beside_on_cuff(bpy)
    else:
        obj, targets = arm_and_chain_beside(bpy)
        assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
        hang_on_handled_cuff(bpy, obj, targets[1], how)
    scene = bpy.context.scene
    key_x(targets[0], ((1, 0.9), (10, 0.7)))
    assert bake_armature(scene, obj, "ALL", 1, 10).summary().endswith("all in reach")
    key_x(targets[0], ((1, 0.8), (10, 0.95)))
    obj.blender_ik.active_chain_index = obj.blender_ik.chains.find("A")
    result = bake_armature(scene, obj, "ACTIVE", 1, 10)
    scene.frame_set(10)
    assert tips_off(bpy, obj, targets)[1] > 0.01  # what Blender plays: B off its target
    assert "B follows the baked chains and was not baked" in result.summary(), result.summary()
