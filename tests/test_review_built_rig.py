"""Adversarial review: operators on a chain whose rig is built. Expected to FAIL on the reviewed code: Mirror
Chain, Place Pole and Add Target read the chain with read_chain, which refuses the rig's own Copy Transforms
constraints with the message meant for a leftover IK constraint (chain._read_chain: 'mute or remove them
(this add-on replaces an IK constraint)'), without the chain's name and without pointing at Remove Rig."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import numpy as np
import pytest

from test_chains import body_with_chains


def built_arm(bpy):
    obj = body_with_chains(bpy, ["hand.L"])
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    return obj


@pytest.mark.parametrize("operator", ["chain_mirror", "place_pole", "add_target"])
def test_review_set_up_operators_work_on_a_chain_with_a_built_rig(blender, operator):
    """A rigger builds the left arm's rig, then mirrors it (or places its pole, or gives it a new target)."""
    bpy = blender
    built_arm(bpy)
    try:
        result = getattr(bpy.ops.blender_ik, operator)()
    except RuntimeError as error:
        message = str(error)
        assert "Chain 'hand.L'" in message and "Remove Rig" in message, f"refusal without the chain or the fix: {message}"
        return
    assert result == {"FINISHED"}


def test_review_place_pole_on_a_built_chain_keeps_the_arm_still(blender):
    """README: Place Pole '... switches the chain to Pole mode: the chain does not move' (here, once rebuilt)."""
    bpy = blender
    obj = built_arm(bpy)
    target = bpy.data.objects["hand.L_target"]
    target.location.y -= 0.1
    target.location.z += 0.1
    bpy.context.view_layer.update()
    before = [np.array(obj.matrix_world @ obj.pose.bones[name].head) for name in ("upper_arm.L", "forearm.L", "hand.L")]
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    bpy.context.view_layer.update()
    after = [np.array(obj.matrix_world @ obj.pose.bones[name].head) for name in ("upper_arm.L", "forearm.L", "hand.L")]
    assert max(np.linalg.norm(a - b) for a, b in zip(after, before)) < 1e-5


def _rig_state(obj):
    """What Build Rig may change: bones, constraints, drivers, chain settings, and the pose Blender shows."""
    bpy.context.view_layer.update()
    drivers = obj.animation_data.drivers if obj.animation_data else ()
    return (sorted(bone.name for bone in obj.data.bones),
            sorted((pose_bone.name, c.name, c.mute, c.influence) for pose_bone in obj.pose.bones
                   for c in pose_bone.constraints),
            sorted(driver.data_path for driver in drivers),
            [(c.name, c.tip_bone, c.live, c.rig_name, c.rig_signature) for c in obj.blender_ik.chains],
            [tuple(round(v, 6) for v in obj.matrix_world @ pose_bone.tail) for pose_bone in obj.pose.bones])


def _weaken_new_rigs(monkeypatch, chains=None):
    """From now on, every rig Build Rig builds (of ``chains``' names, or all: trial rigs too) has its elbow driver bent
    by 10% behind the builder's back, so Blender does not show the solve. Returns the real native_rig.build_many."""
    from blender_ik_addon import native_rig
    build_many = native_rig.build_many

    def build_then_weaken(armature, built):
        build_many(armature, built)
        for _, spec in built:
            if chains is None or spec.name in chains:
                elbow = armature.animation_data.drivers.find(f'pose.bones["IKR-{spec.name}-upper"].rotation_axis_angle')
                elbow.driver.expression = f"0.9 * ({elbow.driver.expression})"

    monkeypatch.setattr(native_rig, "build_many", build_then_weaken)
    return build_many


@pytest.mark.parametrize("broken", ["hand.L", "foot.L"])
def test_build_rig_checks_the_pose_blender_shows_and_removes_what_it_built_when_it_is_wrong(blender, monkeypatch,
                                                                                          broken):
    """The self-check, as Solve's: when the pose Blender evaluates with the new rigs is not the solve (here the elbow
    driver of one rig bent by 10% behind the builder's back), Build Rig refuses, naming the chain, removes every rig it
    built in that call (all or nothing) and leaves the chains' settings (name, Live) as they were."""
    bpy = blender
    from blender_ik_addon import native_rig

    obj = body_with_chains(bpy, ["hand.L", "foot.L"])
    for chain in obj.blender_ik.chains:
        chain.name = ""  # an unnamed chain is named only once built
        chain.target.location.z += 0.05  # off the rest pose, so the rig has to bend the chain
    obj.blender_ik.chains[0].live = True
    before = _rig_state(obj)
    build_many = _weaken_new_rigs(monkeypatch, {broken})
    with pytest.raises(RuntimeError, match=rf"Chain '{broken}'.*the rig was removed"):
        bpy.ops.blender_ik.build_rig(chains="ALL")
    assert _rig_state(obj) == before

    monkeypatch.setattr(native_rig, "build_many", build_many)
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    assert [chain.name for chain in obj.blender_ik.chains] == ["hand.L", "foot.L"]


@pytest.mark.parametrize("changed", ["nothing", "plane", "live"])
def test_a_rebuild_the_self_check_refuses_keeps_the_old_rigs(blender, monkeypatch, changed):
    """A rebuild builds the new rigs beside the old ones and checks them before removing any: when Blender does not
    show the solve with the new rigs (here every new elbow driver bent by 10% behind the builder's back), the refusal
    says nothing was changed and the old rigs are there, whole, and still follow their targets. Before, the old rigs
    were removed first, and the chains were left with none. Live, switched on for a chain with a rig, does not pose
    it while its rig is muted for the trial: its bones' own channels stay as they were too."""
    bpy = blender
    from blender_ik_addon import native_rig

    obj = body_with_chains(bpy, ["hand.L", "foot.L"])
    for chain in obj.blender_ik.chains:
        chain.target.location.z += 0.05
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    if changed == "plane":  # the rig is out of date: a rebuild is what the panel asks for
        obj.blender_ik.chains[0].plane = "TARGET"
    if changed == "live":  # refused by Live while the rig drives the chain
        obj.blender_ik.chains[0].live = True
    before = _rig_state(obj)
    channels = [tuple(pose_bone.rotation_quaternion) for pose_bone in obj.pose.bones]
    build_many = _weaken_new_rigs(monkeypatch)
    with pytest.raises(RuntimeError, match=r"Chain 'hand.L'.*nothing was changed"):
        bpy.ops.blender_ik.build_rig(chains="ALL")
    assert _rig_state(obj) == before
    assert [tuple(pose_bone.rotation_quaternion) for pose_bone in obj.pose.bones] == channels
    assert native_rig.built_chains(obj) == ["foot.L", "hand.L"]
    for chain in obj.blender_ik.chains:  # the old rigs still solve: each tip on its moved target
        chain.target.location.x += 0.03
    bpy.context.view_layer.update()
    for chain in obj.blender_ik.chains:
        tip = obj.matrix_world @ obj.pose.bones[chain.tip_bone].tail
        assert (tip - chain.target.matrix_world.translation).length < 1e-5

    monkeypatch.setattr(native_rig, "build_many", build_many)
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    assert native_rig.built_chains(obj) == ["foot.L", "hand.L"]
    assert not any("~trial" in bone.name for bone in obj.data.bones)


def test_a_refused_build_does_not_name_the_chain(blender):
    """Nothing changes when Build Rig is refused, not even the empty name it would give the chain once built."""
    bpy = blender
    obj = body_with_chains(bpy, ["hand.L"])
    chain = obj.blender_ik.chains[0]
    chain.name, chain.target = "", None
    before = _rig_state(obj)
    with pytest.raises(RuntimeError, match="Set the target"):
        bpy.ops.blender_ik.build_rig(chains="ALL")
    assert _rig_state(obj) == before and chain.name == ""


def test_a_rig_record_read_before_a_build_or_removal_stays_what_it_said(blender):
    """The record of what the rigs added is parsed once per text and shared by its readers (Live asks on every update
    whether a chain's rig is active, the panel on every redraw); a build or a removal works on a copy, so what a reader
    holds never changes under it, and the next read sees the new record."""
    import json

    from blender_ik_addon import native_rig

    obj = body_with_chains(bpy, ["hand.L", "foot.L"])
    obj.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    held = native_rig._record(obj)
    said = json.dumps(held, sort_keys=True)
    assert native_rig._record(obj) is held  # parsed once
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    assert native_rig.built_chains(obj) == ["foot.L", "hand.L"]
    assert bpy.ops.blender_ik.remove_rig(chains="ACTIVE") == {"FINISHED"}
    assert native_rig.built_chains(obj) == ["foot.L"]
    assert json.dumps(held, sort_keys=True) == said and list(held) == ["hand.L"]
