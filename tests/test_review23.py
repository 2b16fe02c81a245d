"""Review 23: a crowd of characters in one shot (Chains from Selected on each figure's hands and feet, Live on)."""
import pytest

from rigs import readout
from scenes import FIGURE_TIPS, build_figure
from test_panel import draw_panels


def crowd(bpy, count, spacing=0.6):
    """``count`` figures (scenes.build_figure) side by side, each with a chain and a target per hand and foot made by
    Chains from Selected, as Blender has evaluated them."""
    from blender_ik_addon.keys import set_pose_bone_selected
    figures = []
    for index in range(count):
        obj = build_figure(f"Figure{index}")
        obj.location.x = index * spacing
        figures.append(obj)
    bpy.context.view_layer.update()
    for obj in figures:
        for other in bpy.context.view_layer.objects:
            other.select_set(other == obj)
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="POSE")
        for pose_bone in obj.pose.bones:
            set_pose_bone_selected(pose_bone, pose_bone.name in FIGURE_TIPS)
        assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
        bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.update()
    return figures


def hang(bpy, obj, armature, bone, how):
    """Hang ``obj`` from ``armature``'s ``bone`` where it is: parented to the bone, or by a Child Of."""
    bpy.context.view_layer.update()
    world = obj.matrix_world.copy()
    if how == "parent":
        obj.parent, obj.parent_type, obj.parent_bone = armature, "BONE", bone
        bpy.context.view_layer.update()
        obj.matrix_world = world
    else:
        constraint = obj.constraints.new("CHILD_OF")
        constraint.target, constraint.subtarget = armature, bone
        bpy.context.view_layer.update()
        constraint.inverse_matrix = (armature.matrix_world @ armature.pose.bones[bone].matrix).inverted()
    bpy.context.view_layer.update()


def tip_miss(bpy, obj, chain):
    """How far the chain's tip is from its target, as Blender evaluates them."""
    bpy.context.view_layer.update()
    tip = obj.matrix_world @ obj.pose.bones[chain.tip_bone].tail
    return (tip - chain.target.matrix_world.translation).length


@pytest.mark.parametrize("how", ["parent", "child_of"])
def test_handshake_loop_across_armatures_is_refused(blender, how):
    """Figure A's hand.L reaches for a target on B's hand.R, and B's hand.R for one on A's hand.L, both live. Posing
    either moves the other's target, so no order solves them: within one armature such a loop is refused with a message,
    across two Live chased it for a pass per armature and stopped, the read-out saying the target was reached while
    Blender showed the tip off it, and the panel telling the user to "turn Live on" (it was on)."""
    bpy = blender
    from blender_ik_addon import runtime
    a, b = crowd(bpy, 2)
    hand_a, hand_b = a.blender_ik.chains["hand.L"], b.blender_ik.chains["hand.R"]
    hang(bpy, hand_a.target, b, "hand.R", how)
    hang(bpy, hand_b.target, a, "hand.L", how)
    for obj in (a, b):
        for chain in obj.blender_ik.chains:
            chain.live = True
    bpy.context.view_layer.update()
    for _ in range(2):
        b.location.z += 0.01  # the figure is moved: all its chains follow, and the handshake with them
        bpy.context.view_layer.update()
    for obj, chain in ((a, hand_a), (b, hand_b)):
        shown = readout(obj, chain.name)
        assert shown.status == runtime.ERROR and "loop" in shown.message, (obj.name, shown)
        assert "'hand.L' of 'Figure0'" in shown.message and "'hand.R' of 'Figure1'" in shown.message
        obj.blender_ik.active_chain_index = obj.blender_ik.chains.find(chain.name)
        labels = [text for kind, text in draw_panels(bpy, obj) if kind == "label"]
        assert not any("turn Live on" in text for text in labels), labels
    for obj in (a, b):  # every other chain is followed, and a read-out that says reached is what Blender shows
        for chain in obj.blender_ik.chains:
            if readout(obj, chain.name).status == runtime.REACHED:
                assert tip_miss(bpy, obj, chain) < 1e-5, (obj.name, chain.name)
    hand_b.live = False  # the loop is broken: A's hand follows B's again, at once and as B moves
    for _ in range(2):
        bpy.context.view_layer.update()
        assert readout(a, hand_a.name).status == runtime.REACHED
        assert tip_miss(bpy, a, hand_a) < 1e-5
        b.location.z += 0.01
