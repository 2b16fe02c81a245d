"""Review 88: chains on the FK controls of Rigify's quadrupeds, generated (the wolf's paws, the horse's four-segment
legs passing through two helpers), as a rigger and an animator use them. Judged where Blender shows the tip."""
import contextlib
import io

import numpy as np
import pytest

from rigs import pose_snapshot

# The limbs' last three FK controls on each rig, and the helpers at their joints the chain passes through.
PAWS = {"wolf": {"foot_fk.L": (("thigh_fk.L", "shin_fk.L", "foot_fk.L"), ("MCH-foot_fk.L",)),
                 "front_foot_fk.R": (("front_thigh_fk.R", "front_shin_fk.R", "front_foot_fk.R"),
                                     ("MCH-front_foot_fk.R",))},
        "horse": {"r_toe_fk.L": (("lower_leg_fk.L", "hind_foot_fk.L", "r_toe_fk.L"),
                                 ("MCH-hind_foot_fk.L", "MCH-r_toe_fk.L")),
                  "f_toe_fk.R": (("forearm_fk.R", "forefoot_fk.R", "f_toe_fk.R"),
                                 ("MCH-forefoot_fk.R", "MCH-f_toe_fk.R"))}}


@pytest.fixture(scope="module")
def quadruped_files(tmp_path_factory):
    """Rigify's wolf and horse, generated once (about 2 s each), saved: each test opens its own copy."""
    import bpy
    folder = tmp_path_factory.mktemp("review88")
    paths = {}
    for kind in PAWS:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.preferences.addon_enable(module="rigify")
        getattr(bpy.ops.object, f"armature_{kind}_metarig_add")()
        with contextlib.redirect_stdout(io.StringIO()):  # its timings
            assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
        bpy.ops.object.mode_set(mode="POSE")
        paths[kind] = str(folder / f"{kind}.blend")
        bpy.ops.wm.save_as_mainfile(filepath=paths[kind])
    return paths


def open_rig(bpy, path):
    bpy.ops.preferences.addon_enable(module="rigify")  # (its load handler reads its own properties)
    bpy.ops.wm.open_mainfile(filepath=path)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    return rig


def misses(bpy, rig):
    """How far Blender shows each chain's tip from its target, over the chain's length."""
    bpy.context.view_layer.update()
    found = {}
    for chain in rig.blender_ik.chains:
        length = sum(rig.data.bones[name].length for name in PAWS_NAMES[chain.tip_bone])
        tip = rig.matrix_world @ rig.pose.bones[chain.tip_bone].tail
        found[chain.tip_bone] = (tip - chain.target.matrix_world.translation).length / length
    return found


PAWS_NAMES = {tip: names for tips in PAWS.values() for tip, (names, _) in tips.items()}


@pytest.mark.parametrize("kind", PAWS)
def test_quadruped_paws_fk_controls_are_chains(blender, quadruped_files, kind):
    """Chains from Selected on the last FK control of each leg gives the leg's last three FK controls, through the
    helpers at the joints. With the rig's IK/FK switch and FK follow at 1 and its root moved, turned and scaled, Solve
    puts every tip on its target; a bake with the root's scale keyed plays back on target on every frame; a built rig
    follows the targets; Mirror Chain gives the other side's leg."""
    bpy = blender
    from blender_ik_addon.chain import chain_path
    rig = open_rig(bpy, quadruped_files[kind])
    for tip, (names, through) in PAWS[kind].items():
        assert chain_path(rig, tip) == (names, through)
    from blender_ik_addon import keys
    for pose_bone in rig.pose.bones:
        keys.set_pose_bone_selected(pose_bone, pose_bone.name in PAWS[kind])
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    assert sorted(chain.tip_bone for chain in rig.blender_ik.chains) == sorted(PAWS[kind])
    switches = rig.pose.bones["thigh_parent.L"]
    switches["IK_FK"], switches["FK_limb_follow"] = 1.0, 1.0
    root = rig.pose.bones["root"]
    root.location, root.rotation_quaternion, root.scale = (0.1, -0.2, 0.05), (0.9, 0.1, 0.2, 0.3), (1.3, 1.3, 1.3)
    rig.location, rig.rotation_euler = (1.0, 2.0, 0.0), (0.0, 0.0, 0.7)
    bpy.context.view_layer.update()
    rng = np.random.default_rng(88)
    scene = bpy.context.scene
    for frame, scale in ((1, 1.0), (5, 1.3), (9, 0.8)):  # each target in reach: near its tip, toward the base
        root.scale = (scale,) * 3
        root.keyframe_insert("scale", frame=frame)
        scene.frame_set(frame)
        for chain in rig.blender_ik.chains:
            names = PAWS_NAMES[chain.tip_bone]
            length = sum(rig.data.bones[name].length for name in names)
            tip = np.array(rig.matrix_world @ rig.pose.bones[chain.tip_bone].tail)
            base = np.array(rig.matrix_world @ rig.pose.bones[names[0]].head)
            chain.target.location = tip + 0.15 * (base - tip) + rng.uniform(-0.03, 0.03, 3) * length * scale
            chain.target.keyframe_insert("location", frame=frame)
    scene.frame_set(5)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert max(misses(bpy, rig).values()) < 1e-5
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=9) == {"FINISHED"}
    for frame in range(1, 10):
        scene.frame_set(frame)
        assert max(misses(bpy, rig).values()) < 1e-5, frame
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    for frame in (2, 7):
        scene.frame_set(frame)
        assert max(misses(bpy, rig).values()) < 1e-5, frame
    assert bpy.ops.blender_ik.remove_rig() == {"FINISHED"}
    left = next(index for index, chain in enumerate(rig.blender_ik.chains) if chain.tip_bone.endswith(".L"))
    rig.blender_ik.active_chain_index = left
    assert bpy.ops.blender_ik.chain_mirror() == {"FINISHED"}
    mirrored = rig.blender_ik.active_chain
    assert mirrored.tip_bone == bpy.utils.flip_name(rig.blender_ik.chains[left].tip_bone)
    assert chain_path(rig, mirrored.tip_bone)[0] == tuple(bpy.utils.flip_name(name)
                                                          for name in PAWS_NAMES[mirrored.tip_bone[:-1] + "L"])


def test_the_wolf_paws_shared_toe_is_refused_naming_its_switch(blender, quadruped_files):
    """The wolf's paw has one toe control for IK and FK, hanging from the leg's ORG bones through MCH-toe.L, which the
    IK/FK switch moves: a chain on it is refused, naming that bone, and nothing changes."""
    bpy = blender
    rig = open_rig(bpy, quadruped_files["wolf"])
    rig.data.bones.active = rig.data.bones["toe.L"]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    before = pose_snapshot(rig), set(bpy.data.objects.keys())
    with pytest.raises(RuntimeError, match="Bone 'MCH-toe.L', which the chain passes through at the joint of "
                                           r"'toe.L', has constraints \(Copy Transforms\)"):
        bpy.ops.blender_ik.add_target()
    with pytest.raises(RuntimeError, match="MCH-toe.L"):
        bpy.ops.blender_ik.solve(chains="ACTIVE")
    assert (pose_snapshot(rig), set(bpy.data.objects.keys())) == before
