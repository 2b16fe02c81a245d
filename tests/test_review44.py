"""Review 44: scale (a crowd rig: many chains on one armature)."""
import pytest

from rigs import add_empty, build_arm

TIPS = 6


def _many_chains(bpy, count=TIPS):
    """An armature with ``count`` three-bone chains side by side under one root, each with a target off its tip, as
    Blender has evaluated it. Returns (armature, chain settings)."""
    from mathutils import Vector
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    for index in range(count):
        parent, head = edit_bones["root"], Vector((2.0 + index, 0.0, 0.0))
        for link, direction in enumerate([(0.0, 0.0, 0.5), (0.3, 0.0, 0.4), (0.3, 0.0, 0.0)]):
            bone = edit_bones.new(f"leg{index}_{link}")
            bone.head, bone.tail, bone.parent = head, head + Vector(direction), parent
            bone.use_connect = link > 0
            parent, head = bone, Vector(bone.tail)
    bpy.ops.object.mode_set(mode="OBJECT")
    for index in range(count):
        chain_settings = obj.blender_ik.chains.add()
        chain_settings.name, chain_settings.tip_bone = f"leg{index}", f"leg{index}_2"
        chain_settings.target = add_empty(f"T{index}", location=(2.5 + index, 0.1, 0.6))
    bpy.context.view_layer.update()
    # Looked up once all are added: adding to a collection may move its items in memory, so an item kept from before
    # the last add() can point at freed memory (the suite crashed or hung there, now and then).
    return obj, list(obj.blender_ik.chains)


def _tip_off(bpy, obj, chain_settings):
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones[chain_settings.tip_bone].tail
            - chain_settings.target.matrix_world.translation).length


@pytest.mark.parametrize("switch", ["on", "off"])
def test_switching_one_chains_live_solves_that_chain_only(blender, monkeypatch, switch):
    """A script (or the panel) turning Live on for each chain of a crowd rig re-solved every live chain of the armature
    at each one: quadratic (200 chains: 6.4 s). Turning one on solves it alone; turning one off solves none; the others
    stay on their targets."""
    from blender_ik_addon import chain as chain_module, live
    bpy = blender
    obj, chains = _many_chains(bpy)
    for chain_settings in chains[:-1]:
        chain_settings.live = True
    bpy.context.view_layer.update()
    if switch == "off":
        chains[-1].live = True
        bpy.context.view_layer.update()
    solved = []
    real = chain_module.solve_current
    monkeypatch.setattr(live, "solve_current",
                        lambda chain, spec, **kw: solved.append(spec.label) or real(chain, spec, **kw))
    chains[-1].live = switch == "on"
    assert solved == (["leg%d" % (TIPS - 1)] if switch == "on" else [])
    bpy.context.view_layer.update()
    for chain_settings in chains[:-1] + ([chains[-1]] if switch == "on" else []):
        assert _tip_off(bpy, obj, chain_settings) < 1e-5
    chains[0].target.location.x += 0.05  # Live still follows the others
    bpy.context.view_layer.update()
    assert _tip_off(bpy, obj, chains[0]) < 1e-5
