"""Review 56: a TD's scale: many chains under one keyed body, judged by what Blender plays back."""
import pytest

from blender_ik_addon import sampling

from rigs import add_empty

FRAMES = range(1, 41)


def _centipede(bpy, segments):
    """A spine of ``segments`` connected bones, its rotations keyed on frames 1, 20 and 40, with a three-bone leg on
    each side of each segment, each leg a chain reaching for an Empty inside its reach that points along its foot.
    Returns the armature."""
    obj = bpy.data.objects.new("centipede", bpy.data.armatures.new("centipede"))
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    previous = None
    for segment in range(segments):
        y = 0.2 * segment
        spine = obj.data.edit_bones.new(f"spine{segment}")
        spine.head, spine.tail, spine.parent = (0, y, 1), (0, y + 0.2, 1), previous
        spine.use_connect = previous is not None
        previous = spine
        for side, x in (("L", 1), ("R", -1)):
            parent = spine
            points = [(0.05 * x, y + 0.1, 1.0), (0.3 * x, y + 0.1, 1.1), (0.5 * x, y + 0.1, 0.6),
                      (0.55 * x, y + 0.1, 0.2)]
            for index in range(3):
                leg = obj.data.edit_bones.new(f"leg{segment}.{index}.{side}")
                leg.head, leg.tail, leg.parent, leg.use_connect = points[index], points[index + 1], parent, index > 0
                parent = leg
    bpy.ops.object.mode_set(mode="OBJECT")
    for frame, angle in ((1, 0.0), (20, 0.004), (40, -0.003)):
        for segment in range(segments):
            pose_bone = obj.pose.bones[f"spine{segment}"]
            pose_bone.rotation_mode = "XYZ"
            pose_bone.rotation_euler = (angle, angle * (segment % 3 - 1), -angle)
            pose_bone.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.scene.frame_set(1)
    for segment in range(segments):
        for side in "LR":
            foot = obj.pose.bones[f"leg{segment}.2.{side}"]
            base, tip = obj.matrix_world @ foot.parent.parent.head, obj.matrix_world @ foot.tail
            target = add_empty(f"target{segment}{side}", location=base.lerp(tip, 0.85))
            target.rotation_mode = "QUATERNION"
            target.rotation_quaternion = (foot.tail - foot.head).to_track_quat("Z", "Y")
            chain = obj.blender_ik.chains.add()
            chain.name, chain.tip_bone, chain.target = foot.name, foot.name, target
    return obj


@pytest.mark.parametrize("segments", [3, 6])
def test_a_centipedes_legs_sample_its_keyed_spine_once(blender, monkeypatch, segments):
    """One armature with a chain per leg under a keyed spine (a centipede, a crowd's tails): each leg's base was
    composed from the spine's keys by sampling the spine's curves once per leg, and each sampling copies the whole
    action (fcurves.evaluate_many), so Bake All grew with legs × keys (200 legs: 1.8 s, 3.4 times 100 legs'). The
    spine's curves are now sampled once for all the legs; every foot still plays on its target."""
    bpy = blender
    obj = _centipede(bpy, segments)
    sampled = []
    evaluate = sampling._evaluate

    def counting(animated, frames, keep_data=False):
        if any(fcurve.data_path.startswith("pose.bones") for fcurve in animated):
            sampled.append(len(animated))
        return evaluate(animated, frames, keep_data)

    monkeypatch.setattr(sampling, "_evaluate", counting)
    assert bpy.ops.blender_ik.bake(frame_start=FRAMES[0], frame_end=FRAMES[-1]) == {"FINISHED"}
    assert sampled == [3 * segments]
    scene, worst = bpy.context.scene, 0.0
    for frame in FRAMES:
        scene.frame_set(frame)
        for chain in obj.blender_ik.chains:
            tip = obj.matrix_world @ obj.pose.bones[chain.tip_bone].tail
            worst = max(worst, (tip - chain.target.matrix_world.translation).length)
    assert worst < 1e-5


def test_a_bakes_checks_go_through_the_armatures_f_curves_as_often_whatever_its_number_of_chains(blender, monkeypatch):
    """Each chain of a bake went through every F-curve of its armature, several times (for its base, and the checks of
    its bones' channels and rotation modes): a centipede's bake grew with legs × F-curves, 1.2 s at 200 legs and 7.6 s
    at 400. The F-curves are now gone through a fixed number of times per bake and found by bone
    (sampling.PlayedCurves)."""
    from blender_ik_addon import keys
    bpy = blender
    seen = [0]
    object_fcurves = keys.object_fcurves

    class Counted(list):
        def __iter__(self):
            for item in list.__iter__(self):
                seen[0] += 1
                yield item

    monkeypatch.setattr(keys, "object_fcurves", lambda obj: Counted(object_fcurves(obj)))
    passes = []
    for segments in (2, 8):
        obj = _centipede(bpy, segments)
        for _ in range(2):  # the first bake creates the legs' F-curves, the second finds them
            seen[0] = 0
            assert bpy.ops.blender_ik.bake(frame_start=FRAMES[0], frame_end=FRAMES[-1]) == {"FINISHED"}
        passes.append(seen[0] / len(object_fcurves(obj)))
    assert 0 < passes[1] <= passes[0] * 1.1, passes  # (0: the bake no longer reads them through keys.object_fcurves)
