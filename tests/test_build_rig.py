"""Build Rig / Remove Rig on a character's chains, judged by Blender's evaluated pose with no Python solve."""
import numpy as np
import pytest

from rigs import pose_snapshot
from test_chains import LIMBS, fk_goal, four_limbs, limb_length, move_targets, tip_error


def armature_state(obj):
    """Bones, constraints, drivers and custom properties of an armature: what Remove Rig must restore."""
    drivers = obj.animation_data.drivers if obj.animation_data else ()
    return (sorted(bone.name for bone in obj.data.bones),
            sorted((pose_bone.name, constraint.name) for pose_bone in obj.pose.bones
                   for constraint in pose_bone.constraints),
            sorted((driver.data_path, driver.array_index) for driver in drivers),
            sorted(obj.keys()), sorted(collection.name for collection in obj.data.collections))


def on_targets(bpy, obj, targets, tips):
    for tip in tips:
        distance, angle = tip_error(bpy, obj, tip, targets[tip])
        assert distance < 1e-5 * limb_length(obj, tip) and angle < 2e-5, tip


def fk_goals(bpy, obj, count, seed):
    """Reachable goals for every limb, made by forward kinematics before any rig is built (a built rig
    overrides the bones' own channels)."""
    rng = np.random.default_rng(seed)
    return [{tip: fk_goal(bpy, obj, tip, rng) for tip in LIMBS} for _ in range(count)]


def place(targets, goals):
    for tip, matrix in goals.items():
        targets[tip].matrix_world = matrix


def test_built_rigs_follow_their_targets_without_the_solver(blender):
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj, targets = four_limbs(bpy, "python")
    before = armature_state(obj)
    goals = fk_goals(bpy, obj, 3, 21)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    assert [rig_state(obj, chain) for chain in obj.blender_ik.chains] == ["BUILT"] * 4
    for goal in goals:  # moved targets: one depsgraph update, and every limb is on its target
        place(targets, goal)
        bpy.context.view_layer.update()
        on_targets(bpy, obj, targets, LIMBS)
    # Solve is not needed on a built chain, and says so rather than fighting the rig.
    with pytest.raises(RuntimeError, match="has a built rig, which solves by itself"):
        bpy.ops.blender_ik.solve(chains="ACTIVE")
    # A setting the rig encodes changed: the chain shows that its rig is out of date; Build Rig rebuilds it.
    foot = obj.blender_ik.chains["foot.L"]
    foot.target = targets["foot.R"]  # another object: the rig still follows the old one
    assert rig_state(obj, foot) == "STALE"
    foot.target = targets["foot.L"]
    targets["foot.L"].name = "renamed"  # the same object: the rig follows it whatever its name
    assert rig_state(obj, foot) == "BUILT"
    obj.blender_ik.chains["hand.L"].up_axis = "Y"
    assert rig_state(obj, obj.blender_ik.chains["hand.L"]) == "STALE"
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    assert rig_state(obj, obj.blender_ik.chains["hand.L"]) == "BUILT"
    assert bpy.ops.blender_ik.remove_rig() == {"FINISHED"}
    assert armature_state(obj) == before


def test_solve_all_leaves_built_chains_to_their_rigs(blender, capfd):
    """The legs built, the arms not: Solve All solved nothing ("has a built rig, which solves by itself"), so the
    rigger had to solve each arm alone. It solves the arms and leaves the legs to their rigs, saying so; when every
    chain it would solve is built, it still refuses."""
    bpy = blender
    obj, targets = four_limbs(bpy, "python")
    bpy.context.view_layer.objects.active = obj
    chains = obj.blender_ik.chains
    for tip in ("foot.L", "foot.R"):
        obj.blender_ik.active_chain_index = chains.find(tip)
        assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    place(targets, fk_goals(bpy, obj, 1, 23)[0])
    bpy.context.view_layer.update()
    legs = pose_snapshot(obj)
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    assert "Solved 2 chains: every tip is on its target; 2 chains with a built rig left to it" in capfd.readouterr().out
    on_targets(bpy, obj, targets, LIMBS)  # the arms by Solve, the legs by their rigs
    assert all(pose_snapshot(obj)[name] == legs[name] for tip in ("foot.L", "foot.R") for name in LIMBS[tip])
    for tip in ("hand.L", "hand.R"):
        chains[tip].enabled = False
    with pytest.raises(RuntimeError, match="have a built rig, which solves by itself"):
        bpy.ops.blender_ik.solve(chains="ALL")


def test_baking_a_built_chain_keys_its_pose_and_mutes_the_rig(blender, capfd):
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj, targets = four_limbs(bpy, "python")
    rng = np.random.default_rng(22)
    for frame in range(1, 7):
        move_targets(bpy, obj, targets, rng)
        for target in targets.values():
            target.keyframe_insert("location", frame=frame)
            target.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    built = obj.blender_ik.active_chain
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=6) == {"FINISHED"}
    assert f"the built rig of {built.name} muted so the keys show" in capfd.readouterr().out
    assert rig_state(obj, built) == "MUTED"
    for frame in range(1, 7):  # the keys drive the chain now, as they were baked from the rig's pose
        bpy.context.scene.frame_set(frame)
        on_targets(bpy, obj, targets, LIMBS)


def test_a_chain_the_solver_refuses_is_not_built(blender):
    bpy = blender
    obj, targets = four_limbs(bpy, "python")
    before = armature_state(obj)
    poses = pose_snapshot(obj)
    obj.blender_ik.chains["foot.R"].target = None
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="Chain 'foot.R': Set the target"):
        bpy.ops.blender_ik.build_rig()
    assert armature_state(obj) == before and pose_snapshot(obj) == poses
    with pytest.raises(RuntimeError, match="has a built rig|None of these chains has a built rig"):
        bpy.ops.blender_ik.remove_rig()


def test_rig_survives_reload_without_the_add_on(blender, tmp_path):
    bpy = blender
    import blender_ik_addon
    obj, targets = four_limbs(bpy, "python")
    goal, = fk_goals(bpy, obj, 1, 23)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    path = str(tmp_path / "rigged.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    blender_ik_addon.unregister()
    try:
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
        obj = bpy.data.objects["Body"]
        targets = {tip: bpy.data.objects[f"{tip}_goal"] for tip in LIMBS}
        place(targets, goal)
        bpy.context.view_layer.update()
        on_targets(bpy, obj, targets, LIMBS)
    finally:
        blender_ik_addon.register()
