"""Review 45: Solve with Auto Keying on, as an animator keys poses as they go (Auto Keying on, move the target, Solve,
change frame, again), judged by what Blender plays back from the keys."""
import pytest

from rigs import arm_with_chain, tips_off


def _keyed(obj):
    """Every (data path, frame) the armature's own action keys."""
    from blender_ik_addon import keys
    return {(curve.data_path, point.co[0]) for curve in keys.object_fcurves(obj) for point in curve.keyframe_points}


def _auto_keying(bpy):
    """The arm's chain, reaching for a turned Empty, with Auto Keying on."""
    obj, chain = arm_with_chain(bpy, rotation=(0.2, 0.4, 0.1))
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    return obj, chain


@pytest.fixture
def preferences(blender):
    """Blender's editing preferences, the keying ones put back afterwards (the factory settings do not reset them)."""
    edit = blender.context.preferences.edit
    names = ("use_keyframe_insert_available", "use_auto_keyframe_insert_needed")
    before = {name: getattr(edit, name) for name in names}
    edit.use_keyframe_insert_available = False
    yield edit
    for name, value in before.items():
        setattr(edit, name, value)


@pytest.mark.parametrize("mode", ["REPEAT", "REPEAT_OFFSET"])
def test_cycle_aware_keying_keys_a_walk_cycle_through_its_cycles_modifier(blender, capfd, preferences, mode):
    """A walk cycle: the action's frame range 1-21, Cyclic Animation, each F-curve with the Cycles modifier that
    cycle-aware keying relies on (it adds one to the curves it creates). Posing at frame 30 with cycle-aware keying
    keys the cycle's frame 10, which plays at 10, 30, 50... Solve refused to key any bone there ("has modifiers (Cycles)
    that change how its keys play"), where Blender's own keying keys it."""
    bpy = blender
    from blender_ik_addon import keys
    obj, chain = _auto_keying(bpy)
    scene = bpy.context.scene
    scene.tool_settings.use_keyframe_cycle_aware = True
    for frame in (1, 21):
        for name in ("b1", "b2", "b3"):
            obj.pose.bones[name].keyframe_insert("rotation_quaternion", frame=frame)
    action = obj.animation_data.action
    action.use_frame_range, action.frame_start, action.frame_end, action.use_cyclic = True, 1, 21, True
    for fcurve in keys.object_fcurves(obj):
        modifier = fcurve.modifiers.new("CYCLES")
        modifier.mode_before = modifier.mode_after = mode
    scene.frame_set(30)
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    report = capfd.readouterr().out
    assert "Auto Keying keyed 3 bones at frame 30" in report, report
    assert {frame for _, frame in _keyed(obj)} == {1.0, 10.0, 21.0}
    chain.target.location.x += 0.3  # what plays is the keys, not the pose left behind
    for frame in (10, 30, 50):
        scene.frame_set(1)
        scene.frame_set(frame)
        if frame == 10:
            chain.target.location.x -= 0.3
        assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-5, frame


def test_a_cycles_modifier_without_cycle_aware_keying_is_still_refused(blender, capfd, preferences):
    """Without cycle-aware keying, Blender would key frame 30 itself, past the cycle, which the modifier then repeats
    from there: the refusal stands."""
    bpy = blender
    from blender_ik_addon import keys
    obj, chain = _auto_keying(bpy)
    scene = bpy.context.scene
    for frame in (1, 21):
        obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=frame)
    for fcurve in keys.object_fcurves(obj):
        fcurve.modifiers.new("CYCLES")
    scene.frame_set(30)
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert "has modifiers (Cycles)" in capfd.readouterr().out
    assert {frame for _, frame in _keyed(obj)} == {1.0, 21.0}


@pytest.mark.parametrize("subframe", [0.0, 0.5])
def test_solve_at_a_subframe_keys_that_subframe(blender, capfd, preferences, subframe):
    """With the Timeline's subframes shown, an animator on frame 5.5 (the target moving between its keys at 1 and 11)
    solves there: Blender's own auto keying keys 5.5. Solve keyed the pose of 5.5 at frame 5, so 5.5 played the old
    pose and frame 5 one that misses its target by 4 cm."""
    bpy = blender
    obj, chain = _auto_keying(bpy)
    scene, target = bpy.context.scene, chain.target
    target.keyframe_insert("location", frame=1)
    target.location = (0.5, 0.6, 1.0)
    target.keyframe_insert("location", frame=11)
    scene.frame_set(5, subframe=subframe)
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert f"Auto Keying keyed 3 bones at frame {5 + subframe:g}" in capfd.readouterr().out
    assert {frame for _, frame in _keyed(obj)} == {5 + subframe}
    scene.frame_set(1)
    scene.frame_set(5, subframe=subframe)
    assert tips_off(bpy, obj, [target], ("b3",))[0] < 1e-5


def test_a_pushed_down_action_is_not_keyed_over_and_the_warning_speaks_of_solve(blender, capfd, preferences):
    """The animator pushed the arm's action down to an NLA strip (starting at frame 101, its frame 1), then Solves at
    frame 110 with Auto Keying: a key in a new action would override the strip on every frame, so nothing is keyed, but
    the warning spoke of a bake ("outside the baked range too", "the bake keeps its keys outside the range") they never
    ran. It now says what a key at this frame would do, and offers the strip's tweak mode, where Solve keys the strip's
    own action at the strip's time, as the test then checks by playing it."""
    bpy = blender
    obj, chain = _auto_keying(bpy)
    scene = bpy.context.scene
    for frame in (1, 20):
        for name in ("b1", "b2", "b3"):
            obj.pose.bones[name].keyframe_insert("rotation_quaternion", frame=frame)
    anim_data = obj.animation_data
    action = anim_data.action
    strip = anim_data.nla_tracks.new().strips.new("Pushed", 1, action)
    anim_data.action = None
    strip.frame_start = 101
    scene.frame_set(110)
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    report = capfd.readouterr().out
    assert f"not keyed: the F-curve rotation_quaternion[0] of bone 'b1' is keyed in NLA strip '{strip.name}'" in report
    assert "bake" not in report and "tweak mode" in report, report
    assert anim_data.action is None
    anim_data.use_tweak_mode = True  # the strip's tweak mode (Tab in the NLA editor), as the warning offers
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert "Auto Keying keyed 3 bones at frame 110" in capfd.readouterr().out
    assert {frame for _, frame in _keyed(obj)} == {1.0, 10.0, 20.0}  # the strip's frame 110 is its action's 10
    chain.target.location.x += 0.3
    scene.frame_set(101)
    scene.frame_set(110)
    chain.target.location.x -= 0.3
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-5


def test_solve_on_an_overridden_character_that_is_not_editable_says_so(blender, tmp_path, preferences):
    """A character linked into the shot and overridden as Blender does it (its collection's hierarchy): the armature
    is a system override, whose pose Blender does not let anyone edit until it is made editable. Solve wrote the pose
    (Blender dropped it) and then failed with 'Blender shows the tip of b3 61.8 cm from where the solve put it:
    something in the scene changes the result in a way the add-on cannot follow'. It now says what is wrong and how to
    fix it; made editable, the character solves and keys."""
    bpy = blender
    from rigs import override_character, pose_snapshot
    obj, chain = _auto_keying(bpy)
    hero = override_character(bpy, tmp_path / "hero.blend", [obj, chain.target])
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True  # the shot's scene, and factory preferences:
    bpy.context.preferences.edit.use_keyframe_insert_available = False  # (on from 5.2) keys the arm's new F-curves
    target = hero.blender_ik.chains[0].target
    before = pose_snapshot(hero)
    with pytest.raises(RuntimeError, match="library override Blender does not let you edit.*Library Override > Make > Selected"):
        bpy.ops.blender_ik.solve()
    assert pose_snapshot(hero) == before and not _keyed(hero)
    hero.override_library.is_system_override = False  # what the Outliner's Make > Selected does to it
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert {frame for _, frame in _keyed(hero)} == {1.0}
    assert tips_off(bpy, hero, [target], ("b3",))[0] < 1e-5
