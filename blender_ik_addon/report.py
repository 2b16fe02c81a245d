"""Leaf: how results are put into words (frame ranges, distances, the one-line summaries)."""
import bpy


def compact_frames(frames, limit=None):
    """[3, 4, 5, 9, 11, 12] -> '3-5, 9, 11-12'; with ``limit``, cut to about that many characters."""
    parts = []
    frames = [int(f) for f in frames]
    start = previous = None
    for frame in frames + [None]:
        if start is not None and (frame is None or frame != previous + 1):
            parts.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = None
        if frame is not None and start is None:
            start = frame
        previous = frame
    text = ", ".join(parts)
    if limit is not None and len(text) > limit:
        text = text[:limit - 3].rsplit(",", 1)[0] + ", ..."
    return text


def distance_text(scene, armature, distance):
    """An armature-space distance in the scene's units, as the user sees it in the world."""
    return bpy.utils.units.to_string(scene.unit_settings.system, "LENGTH",
                                     distance * armature.matrix_world.median_scale)
