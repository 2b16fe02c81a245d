"""Leaf: how results are put into words (frame ranges, distances, the one-line summaries)."""
import bpy


def frame_span(first, last):
    """'3-5', or '-30 to -1' where a hyphen would read as a minus sign."""
    if first == last:
        return f"{first}"
    return f"{first} to {last}" if first < 0 or last < 0 else f"{first}-{last}"


def compact_frames(frames, limit=None):
    """[3, 4, 5, 9, 11, 12] -> '3-5, 9, 11-12'; with ``limit``, cut to about that many characters."""
    parts = []
    frames = [int(f) for f in frames]
    start = previous = None
    for frame in frames + [None]:
        if start is not None and (frame is None or frame != previous + 1):
            parts.append(frame_span(start, previous))
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
