"""Review 14: an animator and a lighter rendering the shot (Live through playback and renders, bakes over time),
judged by what Blender evaluates and renders."""
import numpy as np

from rigs import arm_with_chain


def _arm_rendered_from_the_front(bpy, tmp_path, frames):
    """The arm's chain reaching for an Empty keyed to move along X over ``frames`` (first, last), a small sphere on the
    tip bone's tail, and a tiny Workbench render from the front that draws the sphere alone (transparent film).
    Returns (object, chain settings, render(name): the sphere's centre in pixels on each frame of an animation
    render)."""
    import bmesh
    obj, chain = arm_with_chain(bpy)
    target, scene = chain.target, bpy.context.scene
    for frame, x in zip(frames, (0.9, 0.5)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    mesh = bpy.data.meshes.new("marker")
    shape = bmesh.new()
    bmesh.ops.create_icosphere(shape, subdivisions=1, radius=0.06)
    shape.to_mesh(mesh)
    marker = bpy.data.objects.new("marker", mesh)
    scene.collection.objects.link(marker)
    marker.parent, marker.parent_type, marker.parent_bone = obj, "BONE", "b3"
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(camera)
    camera.data.type, camera.data.ortho_scale = "ORTHO", 3.0
    camera.location, camera.rotation_euler = (0.5, -5.0, 1.0), (np.pi / 2, 0.0, 0.0)
    scene.camera, scene.render.engine = camera, "BLENDER_WORKBENCH"
    scene.render.resolution_x = scene.render.resolution_y = 100
    scene.render.resolution_percentage, scene.render.film_transparent = 100, True
    scene.render.image_settings.file_format, scene.render.image_settings.color_mode = "PNG", "RGBA"
    scene.frame_start, scene.frame_end = frames
    bpy.context.view_layer.update()

    def render(name):
        scene.frame_set(frames[0])
        scene.render.filepath = str(tmp_path / f"{name}_")
        bpy.ops.render.render(animation=True)
        centres = []
        for frame in range(frames[0], frames[1] + 1):
            image = bpy.data.images.load(str(tmp_path / f"{name}_{frame:04d}.png"))
            alpha = np.array(image.pixels[:]).reshape(image.size[1], image.size[0], 4)[..., 3]
            bpy.data.images.remove(image)
            rows, columns = np.nonzero(alpha > 0.5)
            centres.append((columns.mean(), rows.mean()))
        return np.array(centres)
    return obj, chain, render


def test_an_animation_render_shows_each_frames_live_pose(blender, tmp_path):
    """Rendering an animation (``render(animation=True)``, a farm's ``blender -b -a``) with Live on posed every frame
    for the frame before: the handler read the goals before Blender copied the render's frame to them, so each frame
    showed the previous one's pose, exactly (the hand 3.4-6.3 px behind on a 100 px render). Each rendered frame must
    show what the same keys give after a bake."""
    bpy = blender
    obj, chain, render = _arm_rendered_from_the_front(bpy, tmp_path, (1, 4))
    chain.live = True
    live = render("live")
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=4) == {"FINISHED"}
    baked = render("baked")
    assert np.abs(np.diff(baked[:, 0])).min() > 3.0  # the hand moves on every frame
    assert np.abs(live - baked).max() < 0.05, (live, baked)
