"""Rule scorer of cycling_03_opener_playlist (pi-Bench Appendix C.6 style).

Finds the playlist the agent created with the requested title and its songs: the songs added
(``add_song_to_playlist`` calls answered "Song added to the playlist.", in order) or, when the
playlist was shown (``show_playlist``) with every song added, the songs it lists, in playing
order: a listing after the last song makes them complete even in pi-Bench's reading (the last call
of each tool per turn). Checks the
opening song, the absence of explicit songs and the running time (the catalogue's durations).
"""

from typing import Any

TITLE = "spokes season opener 2025"
CLUB_SONG = 8101
EXPLICIT_SONGS = {8104, 8107, 8112}
DURATION_SECONDS = {
    8101: 201, 8102: 224, 8103: 248, 8104: 233, 8105: 199, 8106: 262,
    8107: 187, 8108: 215, 8109: 276, 8110: 241, 8111: 305, 8112: 204,
}  # fmt: skip
MIN_SECONDS = 25 * 60
MAX_SECONDS = 35 * 60


def _default_scores() -> dict[str, int]:
    return {
        "created a playlist titled 'Spokes Season Opener 2025'": 0,
        "the club song 'Pedal Pushers Anthem' is the first song": 0,
        "no explicit song was added to the playlist": 0,
        "the playlist runs between 25 and 35 minutes": 0,
    }


def _title(value: Any) -> str:
    return " ".join(str(value or "").lower().split())


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    playlist_ids: set[int] = set()
    added: list[int] = []
    listed: list[int] | None = None

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue

        if tool_name == "mcp_appworld_spotify__create_playlist":
            if _title(call_payload.get("title")) == TITLE and isinstance(response.get("playlist_id"), int):
                playlist_ids.add(response["playlist_id"])
        elif tool_name == "mcp_appworld_spotify__add_song_to_playlist":
            song_id = call_payload.get("song_id")
            added_ok = "added" in str(response.get("message") or "").lower()
            if added_ok and isinstance(song_id, int) and call_payload.get("playlist_id") in playlist_ids:
                added.append(song_id)
        elif (
            tool_name == "mcp_appworld_spotify__show_playlist"
            and response.get("playlist_id") in playlist_ids
            and isinstance(response.get("songs"), list)
        ):
            listed = [
                s["id"] for s in response["songs"] if isinstance(s, dict) and isinstance(s.get("id"), int)
            ]

    if not playlist_ids:
        return result
    result["created a playlist titled 'Spokes Season Opener 2025'"] = 1
    # A listing that misses a song added later is out of date: the songs added then stand.
    songs = listed if listed is not None and set(added) <= set(listed) else added
    if not songs:
        return result
    if songs[0] == CLUB_SONG:
        result["the club song 'Pedal Pushers Anthem' is the first song"] = 1
    if not EXPLICIT_SONGS & set(songs) and not EXPLICIT_SONGS & set(added):
        result["no explicit song was added to the playlist"] = 1
    if MIN_SECONDS <= sum(DURATION_SECONDS.get(s, 0) for s in songs) <= MAX_SECONDS:
        result["the playlist runs between 25 and 35 minutes"] = 1
    return result
