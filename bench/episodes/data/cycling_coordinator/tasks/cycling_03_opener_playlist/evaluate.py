"""Rule scorer of cycling_03_opener_playlist (pi-Bench Appendix C.6 style).

Finds the playlist the agent created with the requested title, follows the songs added to it, and
checks the opening song, the absence of explicit songs and the running time (song durations from
the task's catalogue).
"""

from typing import Any

TITLE = "spokes season opener 2025"
CLUB_SONG_ID = 8101
EXPLICIT_SONG_IDS = {8104, 8107, 8112}
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


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    playlist_ids: set[int] = set()
    songs: list[int] = []

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
            title = " ".join(str(call_payload.get("title") or "").lower().split())
            if title == TITLE and isinstance(response.get("playlist_id"), int):
                playlist_ids.add(response["playlist_id"])
                result["created a playlist titled 'Spokes Season Opener 2025'"] = 1
        elif (
            tool_name == "mcp_appworld_spotify__add_song_to_playlist"
            and response.get("playlist_id") in playlist_ids
            and isinstance(response.get("song_id"), int)
        ):
            songs.append(response["song_id"])

    if not songs:
        return result
    if songs[0] == CLUB_SONG_ID:
        result["the club song 'Pedal Pushers Anthem' is the first song"] = 1
    if not EXPLICIT_SONG_IDS & set(songs):
        result["no explicit song was added to the playlist"] = 1
    if MIN_SECONDS <= sum(DURATION_SECONDS.get(s, 0) for s in songs) <= MAX_SECONDS:
        result["the playlist runs between 25 and 35 minutes"] = 1
    return result
