"""Review 49: this evening's changes as an animator, a rigger and a TD meet them (Live's goals validated again, system
overrides, Auto Keying through cycles and subframes, animated rotation modes), judged by what Blender shows."""
from rigs import add_empty, arm_with_chain, override_character, readout, tips_off


def test_live_on_an_override_made_a_system_one_again_says_so(blender, tmp_path):
    """A character linked into a shot, its armature's override made editable and Live on, then made a system override
    again (Outliner: Library Override > Clear, or a script): the next drag of the target showed "Blender shows the tip
    of 'b3' 10 cm from where the solve put it ...: something in the scene changes the result in a way the add-on cannot
    follow" (Live's validated chain skipped the override check; Blender ignores the write). The read-out says what it
    is, as when Live is turned on there; made editable again, Live follows the target by itself."""
    bpy = blender
    obj, _ = arm_with_chain(bpy)
    hero = override_character(bpy, tmp_path / "hero.blend", [obj])
    hero.override_library.is_system_override = False
    chain = hero.blender_ik.chains[0]
    chain.target = target = add_empty("Shot target", location=(0.9, 0.3, 1.1))
    chain.live = True
    bpy.context.view_layer.update()
    assert tips_off(bpy, hero, [target], ("b3",))[0] < 1e-5
    hero.override_library.is_system_override = True
    target.location.x -= 0.1
    bpy.context.view_layer.update()
    result = readout(hero)
    assert result.status == "ERROR" and "Blender does not let you edit" in result.message, result.message
    hero.override_library.is_system_override = False
    target.location.x -= 0.05
    bpy.context.view_layer.update()
    assert readout(hero).status == "REACHED"
    assert tips_off(bpy, hero, [target], ("b3",))[0] < 1e-5
