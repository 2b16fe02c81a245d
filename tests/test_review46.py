"""Review 46: the panel, the menus and every operator's availability (an artist clicking everything, in every mode)."""
import types

import pytest

from rigs import arm_with_chain
from test_panel import FakeLayout


@pytest.mark.parametrize("direction", ["UP", "DOWN"])
def test_the_arrows_move_the_chain_the_panel_shows_as_active_when_the_index_is_past_the_end(blender, direction):
    """A script that removes the last chains (``chains.remove(i)``) leaves the list's index past the end; the panel then
    shows the last chain's settings as the active chain's, and Remove Chain removes that one, but the up arrow did
    nothing (it moved from the index, not from the chain the panel shows)."""
    bpy = blender
    obj, _ = arm_with_chain(bpy)
    chains = obj.blender_ik.chains
    for name in ("second", "third", "fourth"):
        chains.add().name = name
    chains.remove(3)  # a script's clean-up: the index stays where it was
    obj.blender_ik.active_chain_index = 3
    assert obj.blender_ik.active_chain.name == "third"
    result = bpy.ops.blender_ik.chain_move(direction=direction)
    names = [chain.name for chain in chains]
    if direction == "UP":
        assert result == {"FINISHED"} and names == ["arm", "third", "second"]
        assert obj.blender_ik.active_chain.name == "third"
    else:  # the last chain: nowhere to go, as in Blender's own lists
        assert result == {"CANCELLED"} and names == ["arm", "second", "third"]


@pytest.mark.parametrize("frame_range, label", [((-10, 0), "Bake All -10 to 0"), ((-30, -20), "Bake All -30 to -20"),
                                                ((1, 250), "Bake All 1-250")])
def test_the_bake_button_names_a_range_of_negative_frames_without_a_minus_sign_in_the_way(blender, frame_range, label):
    """A pre-roll before frame 0 baked with the sub-panel's own range (the scene's starts at 0 at the earliest): the
    button read 'Bake All -10-0', where the hyphen reads as a minus sign; the bake's own report says '-10 to 0'."""
    bpy = blender
    from blender_ik_addon import ui
    obj, _ = arm_with_chain(bpy)
    scene, settings = bpy.context.scene, obj.blender_ik
    settings.bake_use_scene_range = False
    settings.bake_frame_start, settings.bake_frame_end = frame_range
    texts = []

    class Layout(FakeLayout):
        def _sub(self, *args, **kwargs):
            return Layout(self.bpy, self.log)

        row = column = box = grid_flow = _sub

        def operator(self, idname, **kwargs):
            texts.append(kwargs.get("text"))
            return super().operator(idname, **kwargs)

    ui.VIEW3D_PT_blender_ik_bake.draw(types.SimpleNamespace(layout=Layout(bpy, [])),
                                      types.SimpleNamespace(active_object=obj, scene=scene))
    assert texts[0] == label


def test_the_bakes_refusal_of_frames_beyond_blenders_limits_names_negative_frames_without_a_minus_sign_in_the_way(
        blender):
    """The same words in the refusal of a range past Blender's first frame: 'Frames -2000000--1 go beyond ...'."""
    bpy = blender
    arm_with_chain(bpy)
    with pytest.raises(RuntimeError, match=r"Frames -2000000 to -1 go beyond Blender's frame limits"):
        bpy.ops.blender_ik.bake(frame_start=-2000000, frame_end=-1)


@pytest.mark.parametrize("way", ["solve", "live"])
@pytest.mark.parametrize("editable", [False, True])
def test_a_library_override_blender_does_not_let_you_edit_is_refused_saying_so(blender, tmp_path, way, editable):
    """A character linked into a shot and overridden, its armature left a system override (Blender refuses it Pose
    Mode: 'non-editable override object'): the panel's Solve said "Blender shows the tip of 'b3' 61.8 cm from where the
    solve put it ...: something in the scene changes the result in a way the add-on cannot follow", and Live put that on
    the read-out, since Blender ignores the bulk write that poses the chain. Both say what it is and how to make it
    editable; once editable, it solves."""
    bpy = blender
    from rigs import override_character, pose_snapshot, readout, tips_off
    obj, chain = arm_with_chain(bpy)
    hero = override_character(bpy, tmp_path / "hero.blend", [obj, chain.target])
    assert hero.override_library.is_system_override
    hero.override_library.is_system_override = not editable
    target = hero.blender_ik.chains[0].target
    bpy.context.view_layer.update()
    before = pose_snapshot(hero)
    if way == "solve":
        if editable:
            assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        else:
            with pytest.raises(RuntimeError, match="is a library override Blender does not let you edit .*Make > Selected"):
                bpy.ops.blender_ik.solve()
    else:
        hero.blender_ik.chains[0].live = True
        bpy.context.view_layer.update()
        result = readout(hero)
        assert (result.status == "ERROR") != editable
        if not editable:
            assert "Blender does not let you edit" in result.message
    if editable:
        assert tips_off(bpy, hero, [target], ("b3",))[0] < 1e-5
    else:
        assert pose_snapshot(hero) == before


def test_live_set_from_a_script_on_a_mesh_raises_nothing(blender, capfd):
    """The chain settings exist on every object: a script that turns Live on for a mesh's chain (a loop over the
    selection) printed an AttributeError from the update (Blender prints and ignores it). Nothing is solved or changed."""
    bpy = blender
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object
    chain = cube.blender_ik.chains.add()
    chain.tip_bone = "b3"
    chain.live = True
    bpy.context.view_layer.update()
    assert "Traceback" not in capfd.readouterr().err
    assert tuple(cube.location) == (0.0, 0.0, 0.0)



@pytest.mark.parametrize("operator", ["solve", "bake"])
def test_solve_or_bake_with_two_armatures_in_pose_mode_says_which_it_left(blender, capfd, operator):
    """Two figures in Pose Mode at once (Chains from Selected set up both): Solve All (or Bake All) acts on the active
    armature's chains, as the panel shows them, and said nothing of the other, whose moved target stayed unreached. It
    says so now, naming it; its pose is not touched."""
    from rigs import arm_with_chain, pose_snapshot
    bpy = blender
    first, first_chain = arm_with_chain(bpy)
    second, second_chain = arm_with_chain(bpy)
    for obj, chain in ((first, first_chain), (second, second_chain)):
        chain.target.location.x -= 0.1
        obj.select_set(True)
    bpy.context.view_layer.objects.active = first
    bpy.ops.object.mode_set(mode="POSE")
    assert second.mode == "POSE"
    untouched = pose_snapshot(second)
    act = getattr(bpy.ops.blender_ik, operator)
    done, name = ("solved", "Solve") if operator == "solve" else ("baked", "Bake")
    capfd.readouterr()
    assert act(chains="ALL") == {"FINISHED"}
    out = capfd.readouterr().out
    assert f"'{second.name}' (also in Pose Mode) was not {done}: {name} acts on the active armature" in out, out
    assert pose_snapshot(second) == untouched and second.animation_data is None
    for chains, mode in (("ACTIVE", "POSE"), ("ALL", "OBJECT")):  # the active chain, or the active armature alone
        bpy.ops.object.mode_set(mode=mode)
        capfd.readouterr()
        assert act(chains=chains) == {"FINISHED"}
        assert "also in Pose Mode" not in capfd.readouterr().out
