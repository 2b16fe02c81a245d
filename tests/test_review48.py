"""Review 48: a keyed body under IK limbs (an animator baking IK arms and legs on a character animated in FK)."""

import numpy as np
import pytest

from rigs import add_empty
from test_direct_base import FRAMES, _bases_frame_by_frame, _body, plays_on_target, swaying_body_reaching


def _muted_solo_track(obj):
    """A copy of the action in a strip from frame 5, on a track that is muted and solo: Blender plays the solo track
    alone (muted or not), so the object moves four frames behind its action's keys."""
    animation = obj.animation_data
    track = animation.nla_tracks.new()
    track.strips.new("strip", 5, animation.action.copy())
    track.mute, track.is_solo = True, True


def _tweaked_strip_on_a_muted_track(obj):
    """The action pushed down into a strip that starts at frame 5, tweaked, its track muted: Blender plays the tweaked
    action in the strip's time (four frames behind the scene's)."""
    animation = obj.animation_data
    action = animation.action
    track = animation.nla_tracks.new()
    track.strips.new("strip", 5, action)
    animation.action = None
    animation.use_tweak_mode = True
    track.mute = True


@pytest.mark.parametrize("nla", [_muted_solo_track, _tweaked_strip_on_a_muted_track])
def test_a_target_played_through_its_nla_is_read_as_blender_plays_it(blender, nla):
    """The hand target's NLA track muted, but solo, or a strip of it tweaked: Blender plays the target through the NLA
    (the solo track alone; the tweaked action in the strip's time), four frames behind its action. The bake read the
    target from its action's keys at the scene's frames, reported every frame in reach and played back with the hand
    off the target."""
    from blender_ik_addon.ops import bake_armature
    bpy = blender
    obj, chain, target = swaying_body_reaching(bpy)
    nla(target)
    scene = bpy.context.scene
    scene.frame_set(3)
    result = bake_armature(scene, obj, "ALL", 1, 24)
    reached = [int(frame) for frame in result.frames if frame not in set(result.unreachable)]
    assert len(reached) == len(FRAMES)
    plays_on_target(scene, obj, target, reached)


@pytest.mark.parametrize("nla", [_muted_solo_track, _tweaked_strip_on_a_muted_track])
def test_a_body_played_through_its_nla_is_read_as_blender_plays_it(blender, nla):
    """The same for the keyed body: its action does not play as it is (the solo track alone; in the strip's time), so
    the base is read frame by frame, and it is the one Blender poses. (A bake is refused before: its keys would not
    play; this holds the sampling, which composed the base from the action's keys at the scene's frames.)"""
    from blender_ik_addon import sampling
    from blender_ik_addon.chain import ChainSpec, read_chain
    bpy = blender
    obj = _body(bpy, np.random.default_rng(7))
    nla(obj)
    target = add_empty("T", location=(1.0, 0.0, 1.0))
    chains = [(ChainSpec(tip_bone="b3", target=target, name="arm"), read_chain(obj, "b3"))]
    samples = sampling.sample(bpy.context.scene, obj, chains, np.array(FRAMES, dtype=float))
    assert np.abs(samples.bases[0] - _bases_frame_by_frame(bpy, obj)).max() < 2e-6
