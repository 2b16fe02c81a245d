"""Adversarial review 2: Live reuses the Chain it validated while nothing validation reads changed. What it read
of the armature named the chain's bones and their flags, not their rest geometry, so a change of the bones
themselves that keeps their names went unseen: the object given another Armature datablock (a rig swap), the
bones edited in Edit Mode through a second object that shares the armature data, or the armature's scale applied
(Ctrl+A, which scales the bones; it left a false refusal until the next change). Live kept the stale
read-out ("reached") while the tip sat away from the target, and at the next target move it solved with the
old bone lengths and refused its own pose as "something in the scene changes the result"."""
import numpy as np
import pytest

from rigs import add_empty, build_arm, readout, tip_and_direction


def _live_rig(bpy):
    obj = build_arm()
    target = add_empty(location=(0.5, -0.6, 1.3), rotation=(0.2, 0.4, 0.1))
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b3"
    obj.blender_ik.target = target
    bpy.context.view_layer.update()
    obj.blender_ik.live = True
    return obj, target


def _swap_armature_data(bpy, obj):
    other = build_arm(name="Other", lengths=(0.7, 0.6, 0.3))
    bpy.context.view_layer.objects.active = obj
    obj.data = other.data
    bpy.data.objects.remove(other)


def _edit_through_a_second_user(bpy, obj):
    second = bpy.data.objects.new("SameData", obj.data)
    bpy.context.scene.collection.objects.link(second)
    bpy.context.view_layer.update()
    bpy.context.view_layer.objects.active = second
    bpy.ops.object.mode_set(mode="EDIT")
    second.data.edit_bones["b2"].tail.x += 0.2
    second.data.edit_bones["b3"].tail.z += 0.2
    bpy.ops.object.mode_set(mode="OBJECT")


def _apply_scale(bpy, obj):
    obj.scale = (1.3, 1.3, 1.3)
    bpy.context.view_layer.update()
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)


@pytest.mark.parametrize("change", [_swap_armature_data, _edit_through_a_second_user, _apply_scale])
def test_review2_live_follows_a_change_of_the_chain_bones_geometry(blender, change):
    bpy = blender
    obj, target = _live_rig(bpy)
    assert readout(obj).status == "REACHED"
    change(bpy, obj)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    for _ in range(2):  # at once, and after the target moves
        tip, _ = tip_and_direction(obj)
        miss = float(np.linalg.norm(tip - np.array(target.matrix_world.translation)))
        status = readout(obj)
        assert status.status == "REACHED" and miss < 2e-5, (status, miss)
        target.location.x += 0.02
        bpy.context.view_layer.update()
