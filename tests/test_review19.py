"""Review 19: the README's truth (a new user who believes every word of it), judged by what Blender shows."""
import pytest

from rigs import arm_with_chain, readout, tips_off


@pytest.mark.parametrize("role", ["armature", "target"])
@pytest.mark.parametrize("switch, words", [
    ("exclude", "checkbox"),  # the collection's checkbox in the Outliner, which Exclude from View Layer clears
    ("hide_viewport", "screen icon"),  # the collection's own Disable in Viewports
])
def test_a_goal_in_a_collection_the_view_layer_leaves_out_is_refused_with_the_fix_that_works(blender, role, switch,
                                                                                             words):
    """A target in a collection excluded from the view layer is refused by Solve, a live armature there is not solved
    and its read-out says why, as the README says; the message said "enable it in viewports (the screen icon in the
    Outliner)", but the object's and the collection's screen icons were on: what leaves it out is the collection's
    checkbox. The message names the switch that is off, and turning it back on puts the tip on the target."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    subject = obj if role == "armature" else chain.target
    collection = bpy.data.collections.new("Props")
    bpy.context.scene.collection.children.link(collection)
    collection.objects.link(subject)
    bpy.context.scene.collection.objects.unlink(subject)
    layer_collection = bpy.context.view_layer.layer_collection.children["Props"]
    if switch == "exclude":
        layer_collection.exclude = True
    else:
        collection.hide_viewport = True
    if role == "armature":
        chain.live = True
        chain.target.location.x -= 0.1
        bpy.context.view_layer.update()
        message = readout(obj, "arm").message
    else:
        bpy.context.view_layer.update()
        with pytest.raises(RuntimeError) as refused:
            bpy.ops.blender_ik.solve()
        message = str(refused.value)
    assert words in message
    if switch == "exclude":
        layer_collection.exclude = False
    else:
        collection.hide_viewport = False
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    if role == "target":
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-5
