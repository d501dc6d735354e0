"""The ``spotify`` app: a song catalogue, playlists and what is playing.

Records (``apps["spotify"]``):

- ``songs``: ``{song_id, title, artist, album, genre, duration_seconds}``.
- ``playlists``: ``{playlist_id, title, song_ids: [int], created_at}``.
- ``player``: ``{song_id, title, artist, started_at}`` or null (what ``play_music`` started).

Tools (``mcp_appworld_spotify__<api>``): ``search_songs(query)`` (title, artist, album, genre),
``play_music(song_id)``, ``create_playlist(title)`` -> ``{playlist_id}``,
``add_song_to_playlist(playlist_id, song_id)`` (failed if already there), ``show_playlists()``,
``show_playlist(playlist_id)`` (its songs in full, in order).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    Args,
    EpisodeTool,
    NoArgs,
    ToolContext,
    ToolFailed,
    app_tool,
    id_field,
    rows_of,
    search,
)

APP = "spotify"


SONG_FIELDS = ("song_id", "title", "artist", "album", "genre", "duration_seconds")


SEED: dict[str, Any] = {
    "songs": rows_of(
        SONG_FIELDS,
        (1, "Morning Tide", "The Low Harbors", "Saltwater", "indie", 214),
        (2, "Quiet Engines", "Nadia Vale", "Night Shift", "electronic", 251),
        (3, "Paper Lanterns", "The Low Harbors", "Saltwater", "indie", 189),
        (4, "Rainfall Etude", "Ines Corvo", "Studies", "classical", 302),
        (5, "Run the Ridge", "Highline", "Altitude", "rock", 198),
        (6, "Slow Orbit", "Nadia Vale", "Night Shift", "electronic", 276),
        (7, "Focus Garden", "Lumen Trio", "Deep Work", "ambient", 420),
        (8, "Sunday Porch", "Cal Reyes", "Backroads", "folk", 233),
    ),
    "playlists": [{"playlist_id": 1, "title": "Workout", "song_ids": [5], "created_at": -10080.0}],
    "player": None,
}


class QueryArgs(Args):
    query: str = ""


class SongArgs(Args):
    song_id: int = id_field("The song's id.")


class CreatePlaylistArgs(Args):
    title: str = Field(min_length=1)


class PlaylistArgs(Args):
    playlist_id: int = id_field("The playlist's id.")


class AddSongArgs(Args):
    playlist_id: int = id_field("The playlist's id.")
    song_id: int = id_field("The song's id.")


def search_songs(ctx: ToolContext, args: QueryArgs) -> JsonObject:
    return {
        "songs": search(ctx.rows(APP, "songs"), args.query, "song_id", "title", "artist", "album", "genre")
    }


def play_music(ctx: ToolContext, args: SongArgs) -> JsonObject:
    song = ctx.find(APP, "songs", args.song_id, "song")
    player = {
        "song_id": args.song_id,
        "title": song.get("title"),
        "artist": song.get("artist"),
        "started_at": ctx.now,
    }
    ctx.app(APP)["player"] = player
    return {"playing": player}


def create_playlist(ctx: ToolContext, args: CreatePlaylistArgs) -> JsonObject:
    playlist_id = ctx.new_id(APP, "playlists")
    ctx.rows(APP, "playlists").append(
        {"playlist_id": playlist_id, "title": args.title, "song_ids": [], "created_at": ctx.now}
    )
    return {"playlist_id": playlist_id, "title": args.title}


def add_song_to_playlist(ctx: ToolContext, args: AddSongArgs) -> JsonObject:
    playlist = ctx.find(APP, "playlists", args.playlist_id, "playlist")
    ctx.find(APP, "songs", args.song_id, "song")
    song_ids = playlist.setdefault("song_ids", [])
    if args.song_id in song_ids:
        raise ToolFailed(f"song {args.song_id} is already in playlist {args.playlist_id}")
    song_ids.append(args.song_id)
    return {"playlist_id": args.playlist_id, "song_id": args.song_id, "songs": len(song_ids)}


def show_playlists(ctx: ToolContext, args: NoArgs) -> JsonObject:
    return {"playlists": list(ctx.rows(APP, "playlists"))}


def show_playlist(ctx: ToolContext, args: PlaylistArgs) -> JsonObject:
    playlist = ctx.find(APP, "playlists", args.playlist_id, "playlist")
    songs = [ctx.find(APP, "songs", int(s), "song") for s in playlist.get("song_ids", [])]
    return {**playlist, "songs": songs}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(APP, "search_songs", "Search songs by title, artist, album or genre.", QueryArgs, search_songs),
    app_tool(APP, "play_music", "Start playing a song.", SongArgs, play_music),
    app_tool(APP, "create_playlist", "Create an empty playlist.", CreatePlaylistArgs, create_playlist),
    app_tool(APP, "add_song_to_playlist", "Add a song to a playlist.", AddSongArgs, add_song_to_playlist),
    app_tool(APP, "show_playlists", "List the playlists.", NoArgs, show_playlists),
    app_tool(APP, "show_playlist", "Show a playlist and its songs.", PlaylistArgs, show_playlist),
)
