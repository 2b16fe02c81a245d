"""Adversarial review: Mirror Chain on a character whose targets hang from a control (the usual set-up: IK
targets parented to a root or body control). Expected to FAIL on the reviewed code: the mirrored Empty is
made with new_empty (ops.BLENDER_IK_OT_chain_mirror), unparented, at the mirrored world matrix, so moving the
root leaves the right hand's target behind while the left one follows."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import numpy as np
from mathutils import Vector

from test_chains import body_with_chains


def test_review_mirrored_target_keeps_the_parent_of_the_source_target(blender):
    bpy = blender
    obj = body_with_chains(bpy, ["hand.L"])
    left = bpy.data.objects["hand.L_target"]
    root = bpy.data.objects.new("root_ctrl", None)
    bpy.context.scene.collection.objects.link(root)
    world = left.matrix_world.copy()
    left.parent = root
    left.matrix_world = world
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.chain_mirror() == {"FINISHED"}
    right = obj.blender_ik.chains[-1].target
    before = np.array(right.matrix_world.translation)
    root.location += Vector((0.0, -0.3, 0.0))  # the character's root control walks forward
    bpy.context.view_layer.update()
    moved = np.array(right.matrix_world.translation) - before
    assert np.allclose(moved, (0.0, -0.3, 0.0), atol=1e-6), "the mirrored target does not follow the root"
