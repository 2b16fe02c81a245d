"""Review 87: chains that pass through a bone at a joint, as an animator uses them on the fingers of Rigify's full
human, generated, and as a TD meets them on a game-style skeleton. Judged where Blender shows the tip."""
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


def centimetre_arm(bpy):
    """A game-style arm in centimetres (the armature object scaled 0.01, turned as an FBX import turns it): clavicle >
    upperarm > lowerarm > wrist_twist > hand, the twist bone's head snapped onto the hand's through the 3D cursor, as
    Edit Mode's Snap does (armature space to world and back, in float32), and a hand_ik bone beside it at the wrist.
    Returns the object, in Pose Mode, and how far apart the two heads are stored."""
    import math

    from mathutils import Matrix, Vector
    data = bpy.data.armatures.new("Skeleton")
    obj = bpy.data.objects.new("Skeleton", data)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler.x, obj.scale = (2.0, 0.0, 0.0), math.pi / 2, (0.01, 0.01, 0.01)
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = data.edit_bones
    parent = None
    for name, head, tail in (("clavicle_l", (2.0, 140.0, 0.0), (18.0, 142.0, 2.0)),
                             ("upperarm_l", (18.0, 142.0, 2.0), (45.0, 130.0, 5.0)),
                             ("lowerarm_l", (45.0, 130.0, 5.0), (70.123, 120.17, 1.1))):
        bone = edit_bones.new(name)
        bone.head, bone.tail, bone.parent, bone.use_connect = head, tail, parent, parent is not None
        parent = bone
    wrist = Vector(parent.tail)
    cursor = Matrix(obj.matrix_world) @ wrist  # Shift+S, Cursor to Selected on the hand's head...
    twist = edit_bones.new("wrist_twist_l")
    twist.head = Matrix(obj.matrix_world).inverted() @ cursor  # ...and Selection to Cursor on the twist bone's
    twist.tail, twist.parent = wrist + (Vector(parent.head) - wrist) * 0.3, parent
    hand = edit_bones.new("hand_l")
    hand.head, hand.tail, hand.parent = wrist, wrist + Vector((8.0, -3.0, -1.0)), twist
    hand_ik = edit_bones.new("hand_ik_l")
    hand_ik.head, hand_ik.tail, hand_ik.parent = wrist, wrist + Vector((0.0, 5.0, 0.0)), parent
    bpy.ops.object.mode_set(mode="POSE")
    bones = obj.data.bones
    return obj, (bones["wrist_twist_l"].head_local - bones["hand_l"].head_local).length


def test_a_twist_bone_snapped_onto_the_wrist_of_a_centimetre_skeleton_is_passed_through(blender):
    """On a skeleton in centimetres, 2 m from the origin, a twist bone snapped onto the hand's head is stored 1.5e-5 cm
    off it (two float32 steps at 120 cm): the chain took it as a link of its own, lowerarm > wrist_twist > hand, so
    Solve left the upper arm alone and called a target the arm plainly reaches out of reach. The chain is upperarm >
    lowerarm > hand, through the twist bone, and the tip lands on the target, as Blender shows it."""
    bpy = blender
    import numpy as np

    from blender_ik_addon.chain import chain_path
    from blender_ik_addon.ops import tip_target_matrix
    from blender_ik_addon.keys import set_pose_bone_selected
    obj, apart = centimetre_arm(bpy)
    assert apart > 1e-6  # (what the snap stored)
    set_pose_bone_selected(obj.pose.bones["hand_l"], True)
    obj.data.bones.active = obj.data.bones["hand_l"]
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    chain = obj.blender_ik.chains["hand_l"]
    assert chain_path(obj, "hand_l") == (("upperarm_l", "lowerarm_l", "hand_l"), ("wrist_twist_l",))
    rng = np.random.default_rng(4)
    for name in ("upperarm_l", "lowerarm_l", "hand_l"):  # a pose the arm takes, where the target goes
        obj.pose.bones[name].rotation_quaternion = (1.0, *rng.uniform(-0.3, 0.3, 3))
    bpy.context.view_layer.update()
    chain.target.matrix_world = tip_target_matrix(obj, "hand_l", chain.up_axis, chain.roll_axis)
    for name in ("upperarm_l", "lowerarm_l", "hand_l"):
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert readout(obj, "hand_l").status == "REACHED"
    tail = obj.matrix_world @ obj.pose.bones["hand_l"].tail
    assert (tail - chain.target.matrix_world.translation).length < 1e-6  # metres: the arm is about 0.6 long
