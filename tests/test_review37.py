"""Review 37: a studio moving a show from Blender 4.2 LTS to 5.2 LTS (built rigs, overrides, files across versions)."""
import pytest

from rigs import arm_with_chain


def test_baking_an_overridden_character_with_a_built_rig_does_not_say_build_rig_unmutes(blender, tmp_path):
    """A character rigged (Build Rig) in its library file, linked into a shot and overridden: the bake mutes the rig
    so the keys show, and said "(Build Rig unmutes)"; Build Rig there is refused (the bones are the library's). The
    report now says how to show the rig again."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    collection = bpy.data.collections.new("Hero")
    bpy.context.scene.collection.children.link(collection)
    for item in (obj, chain.target):
        collection.objects.link(item)
    path = tmp_path / "hero.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(path), link=True) as (_, linked):
        linked.collections = ["Hero"]
    overridden = linked.collections[0].override_hierarchy_create(bpy.context.scene, bpy.context.view_layer)
    hero = next(item for item in overridden.all_objects if item.type == "ARMATURE")
    bpy.context.view_layer.objects.active = hero
    from blender_ik_addon import ops
    result = ops.bake_armature(bpy.context.scene, hero, frame_start=1, frame_end=3)
    assert result.rigs_muted == ["arm"]
    with pytest.raises(RuntimeError, match="linked from a library"):
        bpy.ops.blender_ik.build_rig()
    assert "Build Rig unmutes" not in result.summary()
    assert "unmute its constraints" in result.summary()
