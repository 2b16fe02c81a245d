"""Review 87: chains that pass through a bone at a joint, as an animator uses them on the fingers of Rigify's full human,
generated, and as a TD meets them on a game-style skeleton. Judged where Blender shows the tip."""
import contextlib
import io

import pytest

from rigs import pose_snapshot, readout

FINGER, MASTER = "f_index.03.L", "f_index.01_master.L"


@pytest.fixture(scope="module")
def full_human_file(tmp_path_factory):
    """Rigify's full human, generated once (about 4 s), saved: each test opens its own copy."""
    import bpy
    path = str(tmp_path_factory.mktemp("review87") / "full_human.blend")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    with contextlib.redirect_stdout(io.StringIO()):  # its timings
        assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="POSE")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


@pytest.fixture
def full_human(blender, full_human_file):
    """The generated rig, in Pose Mode, with a chain on the index finger's FK controls and a target at its tip."""
    bpy = blender
    bpy.ops.preferences.addon_enable(module="rigify")  # (its load handler reads its own properties)
    bpy.ops.wm.open_mainfile(filepath=full_human_file)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    rig.data.bones.active = rig.data.bones[FINGER]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    return rig


@pytest.mark.parametrize("how", ("solve", "live"))
def test_a_finger_its_master_curls_says_the_driver_does_it(blender, full_human, how):
    """The master control's scale curls the finger through the drivers of MCH-f_index.0N_drv.L: on a frame where it is
    keyed curled, Solve and Live's read-out said the bone "is posed ...: clear its pose (Alt+G, Alt+R, Alt+S)", which
    changes nothing on a driven bone. They name the driver and what it reads; back at rest, the tip is on target."""
    bpy = blender
    rig = full_human
    scene = bpy.context.scene
    master = rig.pose.bones[MASTER]
    for frame, scale in ((1, 1.0), (5, 0.7)):
        master.scale.y = scale
        master.keyframe_insert("scale", index=1, frame=frame)
    scene.frame_set(5)
    before = pose_snapshot(rig)
    expected = ("Bone 'MCH-f_index.02_drv.L', which the chain passes through at the joint of 'f_index.02.L', is posed "
                "by its driver on 'rotation_euler' (it reads pose.bones[\"f_index.01_master.L\"].scale.y); the chain "
                "takes it at rest: set what the driver reads back to rest on this frame")
    chain = rig.blender_ik.active_chain
    if how == "solve":
        with pytest.raises(RuntimeError) as error:
            bpy.ops.blender_ik.solve(chains="ACTIVE")
        assert expected in str(error.value)
    else:
        chain.live = True
        status = readout(rig, chain.name)
        assert status.status == "ERROR" and expected in status.message, status.message
    assert pose_snapshot(rig) == before
    scene.frame_set(1)
    if how == "solve":
        assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    assert readout(rig, chain.name).status == "REACHED"
    tail = rig.matrix_world @ rig.pose.bones[FINGER].tail
    assert (tail - chain.target.matrix_world.translation).length < 1e-6
