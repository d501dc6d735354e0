"""The ``spotify`` app: a music catalogue, the users' playlists, likes, libraries, downloads,
followed artists, song reviews and a music player, on AppWorld's tool surface.

Records (``apps["spotify"]``; times are ``YYYY-MM-DDTHH:MM:SS``):

- ``users``: the accounts (see ``seed``); login is by email.
- ``songs``: ``{song_id, title, album_id (null for a single), artist_ids: [int], duration (s),
  release_date, genre, play_count, rating, like_count, review_count}``.
- ``albums``: ``{album_id, title, artist_ids: [int], release_date, genre, rating, like_count,
  review_count}``; an album's songs are the songs whose ``album_id`` is its id, in their order.
- ``artists``: ``{artist_id, name, genre, follower_count, created_at}``.
- ``playlists``: ``{playlist_id, title, user_id (owner), is_public, created_at, rating,
  like_count, review_count, song_ids: [int]}`` (``song_ids`` in playing order).
- ``song_reviews``: ``{song_review_id, song_id, user_id, rating (1..5), title, text, created_at}``.
- ``song_likes``: ``{song_like_id, user_id, song_id, liked_at}``; ``album_likes``:
  ``{album_like_id, user_id, album_id, liked_at}``; ``playlist_likes``: ``{playlist_like_id,
  user_id, playlist_id, liked_at}``.
- ``library_songs``: ``{library_song_id, user_id, song_id, added_at}``; ``library_albums``:
  ``{library_album_id, user_id, album_id, added_at}``.
- ``downloaded_songs``: ``{downloaded_song_id, user_id, song_id, downloaded_at}``.
- ``artist_follows``: ``{artist_follow_id, user_id, artist_id, followed_at}``.
- ``music_players``: ``{music_player_id, user_id, queue_song_ids: [int], cursor_position (null
  when the queue is empty), is_playing, is_looping, played_seconds}``, one per user, made by the
  first call that changes it.

Counters shown by the APIs are the stored fields, kept up to date by the calls: a like or unlike
moves ``like_count``, a follow ``follower_count``, a review ``rating`` (the average) and
``review_count``.

Tools (``mcp_appworld_spotify__<api>``): ``login``, ``logout``; catalogue (no token):
``show_genres``, ``search_songs``, ``show_song``, ``search_albums``, ``show_album``,
``search_artists``, ``show_artist``, ``show_song_reviews``, ``show_song_review``; with a token:
``like_song``, ``unlike_song``, ``show_liked_songs``, ``like_album``, ``like_playlist``,
``follow_artist``, ``unfollow_artist``, ``show_artist_following``, ``show_following_artists``,
``add_song_to_library``, ``remove_song_from_library``, ``show_song_library``,
``add_album_to_library``, ``show_album_library``, ``download_song``, ``remove_downloaded_song``,
``show_downloaded_songs``, ``search_playlists``, ``show_playlist_library``, ``show_playlist``,
``create_playlist``, ``delete_playlist``, ``add_song_to_playlist``,
``remove_song_from_playlist``, ``review_song``, ``update_song_review``, ``play_music``,
``previous_song``, ``next_song``, ``show_current_song``, ``show_song_queue``, ``add_to_queue``,
``remove_song_from_queue``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    MAX_DATE,
    MAX_INT,
    MIN_DATE,
    AppApis,
    AppArgs,
    AuthArgs,
    AuthPageArgs,
    EmailAddress,
    EpisodeTool,
    NoAppArgs,
    PageArgs,
    Row,
    ToolContext,
    ToolFailed,
    app_tool,
    check_owner,
    check_sort,
    date_bounds,
    id_field,
    in_dates,
    in_range,
    login_tool,
    logout_tool,
    not_found,
    optional_id_field,
    page,
    retrieve,
    sort_rows,
    update_fields,
)

APP = "spotify"
apis = AppApis(APP)
LINK = "https://spotify.com"


# ---------------------------------------------------------------- arguments


def _query() -> str:
    result: str = Field(default="", description="Search text; it ranks the results, it does not filter them.")
    return result


def _sort_by(fields: str) -> str | None:
    result: str | None = Field(default=None, description=f"+field or -field, the field one of: {fields}.")
    return result


def _min_date(what: str) -> str:
    result: str = Field(default=MIN_DATE, description=f"Earliest {what} (YYYY-MM-DD).")
    return result


def _max_date(what: str) -> str:
    result: str = Field(default=MAX_DATE, description=f"Latest {what} (YYYY-MM-DD).")
    return result


def _min_count(what: str) -> int:
    result: int = Field(default=0, ge=0, description=f"Lowest {what}.")
    return result


def _max_count(what: str) -> int:
    result: int = Field(default=MAX_INT, ge=0, description=f"Highest {what}.")
    return result


def _min_rating() -> float:
    result: float = Field(default=0, ge=0, le=5, description="Lowest average rating.")
    return result


def _max_rating() -> float:
    result: float = Field(default=5, ge=0, le=5, description="Highest average rating.")
    return result


class SongArgs(AppArgs):
    song_id: int = id_field("The song's id.")


class AuthSongArgs(AuthArgs):
    song_id: int = id_field("The song's id.")


class AlbumArgs(AppArgs):
    album_id: int = id_field("The album's id.")


class AuthAlbumArgs(AuthArgs):
    album_id: int = id_field("The album's id.")


class ArtistArgs(AppArgs):
    artist_id: int = id_field("The artist's id.")


class AuthArtistArgs(AuthArgs):
    artist_id: int = id_field("The artist's id.")


class AuthPlaylistArgs(AuthArgs):
    playlist_id: int = id_field("The playlist's id.")


class PlaylistSongArgs(AuthArgs):
    playlist_id: int = id_field("The playlist's id.")
    song_id: int = id_field("The song's id.")


class CreatePlaylistArgs(AuthArgs):
    title: str = Field(min_length=1, description="The new playlist's title.")
    is_public: bool = Field(default=False, description="Whether others can see the playlist.")


class SearchSongsArgs(PageArgs):
    query: str = _query()
    artist_id: int | None = optional_id_field("Only songs by this artist.")
    album_id: int | None = optional_id_field("Only songs of this album.")
    genre: str | None = Field(default=None, description="Only songs of this genre.")
    min_release_date: str = _min_date("release date")
    max_release_date: str = _max_date("release date")
    min_duration: int = _min_count("duration in seconds")
    max_duration: int = _max_count("duration in seconds")
    min_rating: float = _min_rating()
    max_rating: float = _max_rating()
    min_like_count: int = _min_count("like count")
    max_like_count: int = _max_count("like count")
    min_play_count: int = _min_count("play count")
    max_play_count: int = _max_count("play count")
    sort_by: str | None = _sort_by("rating, like_count, play_count")


class SearchAlbumsArgs(PageArgs):
    query: str = _query()
    min_rating: float = _min_rating()
    max_rating: float = _max_rating()
    min_release_date: str = _min_date("release date")
    max_release_date: str = _max_date("release date")
    min_like_count: int = _min_count("like count")
    max_like_count: int = _max_count("like count")
    genre: str | None = Field(default=None, description="Only albums of this genre.")
    sort_by: str | None = _sort_by("rating, release_date")


class SearchArtistsArgs(PageArgs):
    query: str = _query()
    genre: str | None = Field(default=None, description="Only artists of this genre.")
    min_follower_count: int = _min_count("follower count")
    max_follower_count: int = _max_count("follower count")
    sort_by: str | None = _sort_by("follower_count")


class SearchPlaylistsArgs(AuthPageArgs):
    query: str = _query()
    min_like_count: int = _min_count("like count")
    max_like_count: int = _max_count("like count")
    min_rating: float = _min_rating()
    max_rating: float = _max_rating()
    sort_by: str | None = _sort_by("like_count, rating, created_at")


class LikedSongsArgs(AuthPageArgs):
    sort_by: str = Field(default="-liked_at", description="+field or -field, the field liked_at or title.")


class PlaylistLibraryArgs(AuthPageArgs):
    is_public: bool | None = Field(
        default=None, description="Only public (true) or private (false) playlists."
    )


class DownloadedSongsArgs(AuthPageArgs):
    query: str = _query()
    min_downloaded_at: str = _min_date("download date")
    max_downloaded_at: str = _max_date("download date")
    sort_by: str | None = _sort_by("downloaded_at")


class SongReviewsArgs(PageArgs):
    song_id: int = id_field("The song's id.")
    query: str = _query()
    user_email: EmailAddress | None = Field(default=None, description="Only the review by this user.")
    min_rating: int = Field(default=1, ge=1, le=5, description="Lowest rating.")
    max_rating: int = Field(default=5, ge=1, le=5, description="Highest rating.")
    sort_by: str | None = _sort_by("rating, created_at")


class ReviewSongArgs(AuthArgs):
    song_id: int = id_field("The song's id.")
    rating: int = Field(ge=1, le=5, description="Rating from 1 to 5.")
    title: str = Field(default="", description="The review's title.")
    text: str = Field(default="", description="The review's text.")


class ReviewArgs(AppArgs):
    review_id: int = id_field("The song review's id.")


class UpdateReviewArgs(AuthArgs):
    review_id: int = id_field("The song review's id.")
    rating: int | None = Field(default=None, ge=1, le=5, description="New rating from 1 to 5.")
    title: str | None = Field(default=None, description="New title.")
    text: str | None = Field(default=None, description="New text.")


class PlayMusicArgs(AuthArgs):
    song_id: int | None = optional_id_field("Put this song first in the queue and play it.")
    album_id: int | None = optional_id_field("Replace the queue with this album and play it.")
    playlist_id: int | None = optional_id_field("Replace the queue with this playlist and play it.")
    queue_position: int | None = Field(
        default=None, ge=0, description="Play the song at this queue position."
    )


class AddToQueueArgs(AuthArgs):
    song_id: int | None = optional_id_field("Add this song to the end of the queue.")
    album_id: int | None = optional_id_field("Add this album's songs to the end of the queue.")
    playlist_id: int | None = optional_id_field("Add this playlist's songs to the end of the queue.")


class QueuePositionArgs(AuthArgs):
    position: int = Field(description="The position in the queue, from 0.")


# ---------------------------------------------------------------- lookups and views


def _song(ctx: ToolContext, song_id: int) -> Row:
    return ctx.find(APP, "songs", song_id, "song")


def _album(ctx: ToolContext, album_id: int) -> Row:
    return ctx.find(APP, "albums", album_id, "album")


def _artist(ctx: ToolContext, artist_id: int) -> Row:
    return ctx.find(APP, "artists", artist_id, "artist")


def _playlist(ctx: ToolContext, playlist_id: int) -> Row:
    return ctx.find(APP, "playlists", playlist_id, "playlist")


def _by_id(ctx: ToolContext, collection: str, key: str) -> dict[Any, Row]:
    return {row.get(key): row for row in ctx.rows(APP, collection)}


def _artist_refs(artists: dict[Any, Row], ids: Iterable[Any]) -> list[JsonObject]:
    return [{"id": i, "name": artists[i].get("name")} for i in ids if i in artists]


def _artist_names(artists: dict[Any, Row], ids: Iterable[Any]) -> str:
    return " ".join(str(artists[i].get("name", "")) for i in ids if i in artists)


class Catalogue:
    """The songs, albums and artists of one call, indexed once."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.songs = _by_id(ctx, "songs", "song_id")
        self.albums = _by_id(ctx, "albums", "album_id")
        self.artists = _by_id(ctx, "artists", "artist_id")

    def song(self, song: Row, *, full: bool = False) -> JsonObject:
        """AppWorld's song object: the short form (lists, queue, library) or the full one."""
        album = self.albums.get(song.get("album_id"))
        out: JsonObject = {
            "song_id": song["song_id"],
            "title": song.get("title"),
            "album_id": song.get("album_id"),
            "album_title": album.get("title") if album is not None else None,
            "duration": song.get("duration"),
            "artists": _artist_refs(self.artists, song.get("artist_ids", [])),
        }
        if full:
            out |= {
                "release_date": song.get("release_date"),
                "genre": song.get("genre"),
                "play_count": song.get("play_count", 0),
                "rating": song.get("rating", 0.0),
                "like_count": song.get("like_count", 0),
                "review_count": song.get("review_count", 0),
                "shareable_link": f"{LINK}/songs/{song['song_id']}",
            }
        return out

    def song_text(self, song: Row) -> str:
        artists = _artist_names(self.artists, song.get("artist_ids", []))
        return f"{song.get('title', '')} {song.get('genre', '')} {artists}"

    def album_songs(self, album_id: Any) -> list[Row]:
        return [s for s in self.songs.values() if s.get("album_id") == album_id]

    def album(self, album: Row, *, full: bool = False) -> JsonObject:
        songs = self.album_songs(album["album_id"])
        out: JsonObject = {
            "album_id": album["album_id"],
            "title": album.get("title"),
            "genre": album.get("genre"),
            "artists": _artist_refs(self.artists, album.get("artist_ids", [])),
            "rating": album.get("rating", 0.0),
            "like_count": album.get("like_count", 0),
            "review_count": album.get("review_count", 0),
            "release_date": album.get("release_date"),
        }
        if full:
            out["shareable_link"] = f"{LINK}/albums/{album['album_id']}"
            out["songs"] = [
                {"id": s["song_id"], "title": s.get("title"), "artist_ids": list(s.get("artist_ids", []))}
                for s in songs
            ]
        else:
            out["song_ids"] = [s["song_id"] for s in songs]
        return out

    def album_text(self, album: Row) -> str:
        artists = _artist_names(self.artists, album.get("artist_ids", []))
        return f"{album.get('title', '')} {album.get('genre', '')} {artists}"

    def playlist(self, playlist: Row, *, full: bool = False) -> JsonObject:
        out: JsonObject = {
            "playlist_id": playlist["playlist_id"],
            "title": playlist.get("title"),
            "is_public": bool(playlist.get("is_public", False)),
            "rating": playlist.get("rating", 0.0),
            "like_count": playlist.get("like_count", 0),
            "review_count": playlist.get("review_count", 0),
            "owner": self.ctx.person_of(APP, playlist.get("user_id")),
            "created_at": playlist.get("created_at"),
        }
        song_ids = list(playlist.get("song_ids", []))
        if full:
            out["shareable_link"] = (
                f"{LINK}/playlists/{playlist['playlist_id']}" if out["is_public"] else None
            )
            out["songs"] = [
                {
                    "id": i,
                    "title": self.songs[i].get("title"),
                    "artist_ids": [a for a in self.songs[i].get("artist_ids", []) if a in self.artists],
                }
                for i in song_ids
                if i in self.songs
            ]
        else:
            out["song_ids"] = song_ids
        return out


def _artist_view(artist: Row) -> JsonObject:
    return {
        "artist_id": artist["artist_id"],
        "name": artist.get("name"),
        "genre": artist.get("genre"),
        "follower_count": artist.get("follower_count", 0),
        "created_at": artist.get("created_at"),
    }


def _review_view(ctx: ToolContext, review: Row) -> JsonObject:
    return {
        "song_review_id": review["song_review_id"],
        "song_id": review.get("song_id"),
        "rating": review.get("rating"),
        "title": review.get("title", ""),
        "text": review.get("text", ""),
        "created_at": review.get("created_at"),
        "user": ctx.person_of(APP, review.get("user_id")),
    }


# ---------------------------------------------------------------- filters and per-user records


Check = Callable[[Row], bool]


def _range(field: str, low: float, high: float, default_low: float, default_high: float) -> Check | None:
    """A range filter on a number field; None when both bounds are the defaults (no filter)."""
    if low == default_low and high == default_high:
        return None
    return lambda row: in_range(row.get(field), low, high, default_low, default_high)


def _date_range(field: str, low: str, high: str) -> Check | None:
    """A date filter on ``field`` by the arguments ``min_<field>`` and ``max_<field>``."""
    if low == MIN_DATE and high == MAX_DATE:
        return None
    bounds = date_bounds(low, high, f"min_{field}", f"max_{field}")
    return lambda row: in_dates(row.get(field), bounds)


def _genre(genre: str | None) -> Check | None:
    if genre is None:
        return None
    wanted = genre.lower()
    return lambda row: str(row.get("genre", "")).lower() == wanted


def _keep(rows: Iterable[Row], *tests: Check | None) -> list[Row]:
    active = [t for t in tests if t is not None]
    return [r for r in rows if all(t(r) for t in active)]


def _bump(record: Row, field: str, by: int) -> None:
    record[field] = max(0, int(record.get(field) or 0) + by)


_TARGETS: dict[str, tuple[str, str, type[AuthArgs]]] = {
    "song_id": ("songs", "song", AuthSongArgs),
    "album_id": ("albums", "album", AuthAlbumArgs),
    "playlist_id": ("playlists", "playlist", AuthPlaylistArgs),
    "artist_id": ("artists", "artist", AuthArtistArgs),
}
"""What an id names: its collection, AppWorld's name of it, and the arguments of the tools that
mark it (a token and the id)."""


class _Mark(NamedTuple):
    target: str
    """The id of the record it marks (a key of ``_TARGETS``)."""
    stamp: str
    """The field of the mark's time."""
    counter: str | None
    """The marked record's field that counts its marks (None: not counted)."""


_MARKS = {
    "song_likes": _Mark("song_id", "liked_at", "like_count"),
    "album_likes": _Mark("album_id", "liked_at", "like_count"),
    "playlist_likes": _Mark("playlist_id", "liked_at", "like_count"),
    "artist_follows": _Mark("artist_id", "followed_at", "follower_count"),
    "library_songs": _Mark("song_id", "added_at", None),
    "library_albums": _Mark("album_id", "added_at", None),
    "downloaded_songs": _Mark("song_id", "downloaded_at", None),
}
"""A user's marks of catalogue records (likes, follows, library entries, downloads), by
collection. A mark is ``{<mark>_id, user_id, <target>, <stamp>}``, at most one per user and
record."""


def _marking_tool(
    api: str, description: str, collection: str, *, already: str, done: str
) -> EpisodeTool[AuthArgs]:
    """An API that marks a record for the caller (a mark of ``collection``), once; the record's
    counter goes up. A playlist must be one the caller may see."""
    target, stamp, counter = _MARKS[collection]
    table, what, args_model = _TARGETS[target]

    def run(ctx: ToolContext, args: AuthArgs) -> JsonObject:
        user = ctx.user(APP, args.access_token)
        target_id = getattr(args, target)
        record = ctx.find(APP, table, target_id, what)
        if table == "playlists":
            _may_see(user, record)
        if ctx.my(APP, collection, user, **{target: target_id}) is not None:
            raise ToolFailed(already)
        mark = {"user_id": user["user_id"], target: target_id, stamp: ctx.timestamp()}
        ctx.insert(APP, collection, mark)
        if counter is not None:
            _bump(record, counter, 1)
        return {"message": done}

    return app_tool(APP, api, description, args_model, run)


def _unmarking_tool(
    api: str, description: str, collection: str, *, must_exist: bool = False, missing: str, done: str
) -> EpisodeTool[AuthArgs]:
    """The API that takes back a mark of ``_marking_tool`` (refused when there is none); the
    record's counter goes down. The record must exist only when ``must_exist`` (409)."""
    target, _, counter = _MARKS[collection]
    table, what, args_model = _TARGETS[target]

    def run(ctx: ToolContext, args: AuthArgs) -> JsonObject:
        user = ctx.user(APP, args.access_token)
        target_id = getattr(args, target)
        if must_exist:
            ctx.find(APP, table, target_id, what)
        mark = ctx.my(APP, collection, user, **{target: target_id})
        if mark is None:
            raise ToolFailed(missing)
        ctx.remove(APP, collection, mark)
        record = ctx.get(APP, table, target_id)
        if counter is not None and record is not None:
            _bump(record, counter, -1)
        return {"message": done}

    return app_tool(APP, api, description, args_model, run)


def _marked(
    ctx: ToolContext, user: Row, collection: str, found: dict[Any, Row], view: Callable[[Row], JsonObject]
) -> list[JsonObject]:
    """The ``view`` of each record of ``found`` (by id) that the caller marked in
    ``collection``, in the order of marking, with the time of the mark."""
    target, stamp, _ = _MARKS[collection]
    return [
        view(found[mark[target]]) | {stamp: mark.get(stamp)}
        for mark in ctx.mine(APP, collection, user)
        if mark.get(target) in found
    ]


# ---------------------------------------------------------------- catalogue


apis.add(
    login_tool(APP),
    logout_tool(APP),
)


@apis.api("List every music genre of the catalogue.")
def show_genres(ctx: ToolContext, args: NoAppArgs) -> list[Any]:
    genres: list[Any] = []
    for song in ctx.rows(APP, "songs"):
        genre = song.get("genre")
        if genre not in genres:
            genres.append(genre)
    return genres


@apis.api("Search songs (title, genre, artists), with optional filters.")
def search_songs(ctx: ToolContext, args: SearchSongsArgs) -> list[JsonObject]:
    cat = Catalogue(ctx)
    rows = _keep(
        ctx.rows(APP, "songs"),
        None if args.album_id is None else (lambda r: r.get("album_id") == args.album_id),
        None if args.artist_id is None else (lambda r: args.artist_id in r.get("artist_ids", [])),
        _genre(args.genre),
        _date_range("release_date", args.min_release_date, args.max_release_date),
        _range("duration", args.min_duration, args.max_duration, 0, MAX_INT),
        _range("rating", args.min_rating, args.max_rating, 0, 5),
        _range("like_count", args.min_like_count, args.max_like_count, 0, MAX_INT),
        _range("play_count", args.min_play_count, args.max_play_count, 0, MAX_INT),
    )
    items = [(cat.song_text(s), cat.song(s, full=True)) for s in rows]
    return retrieve(items, args, ("rating", "like_count", "play_count"))


@apis.api("Show one song in full, with its shareable link.")
def show_song(ctx: ToolContext, args: SongArgs) -> JsonObject:
    return Catalogue(ctx).song(_song(ctx, args.song_id), full=True)


@apis.api("Search albums (title, genre, artists), with optional filters.")
def search_albums(ctx: ToolContext, args: SearchAlbumsArgs) -> list[JsonObject]:
    cat = Catalogue(ctx)
    rows = _keep(
        ctx.rows(APP, "albums"),
        _genre(args.genre),
        _date_range("release_date", args.min_release_date, args.max_release_date),
        _range("like_count", args.min_like_count, args.max_like_count, 0, MAX_INT),
        _range("rating", args.min_rating, args.max_rating, 0, 5),
    )
    items = [(cat.album_text(a), cat.album(a)) for a in rows]
    return retrieve(items, args, ("rating", "release_date"))


@apis.api("Show one album and its songs.")
def show_album(ctx: ToolContext, args: AlbumArgs) -> JsonObject:
    return Catalogue(ctx).album(_album(ctx, args.album_id), full=True)


@apis.api("Search artists by name or genre.")
def search_artists(ctx: ToolContext, args: SearchArtistsArgs) -> list[JsonObject]:
    rows = _keep(
        ctx.rows(APP, "artists"),
        _genre(args.genre),
        _range("follower_count", args.min_follower_count, args.max_follower_count, 0, MAX_INT),
    )
    items = [(f"{a.get('name', '')} {a.get('genre', '')}", _artist_view(a)) for a in rows]
    return retrieve(items, args, ("follower_count",))


@apis.api("Show one artist.")
def show_artist(ctx: ToolContext, args: ArtistArgs) -> JsonObject:
    return _artist_view(_artist(ctx, args.artist_id))


# ---------------------------------------------------------------- likes, follows, libraries, downloads


def _may_see(user: Row, playlist: Row) -> None:
    if not playlist.get("is_public") and playlist.get("user_id") != user["user_id"]:
        raise ToolFailed("This playlist is not public, and does not belong to you, so you cannot access it.")


apis.add(
    _marking_tool(
        "like_song",
        "Like a song.",
        "song_likes",
        already="You have already liked this song in the past.",
        done="Song liked.",
    ),
    _unmarking_tool(
        "unlike_song",
        "Take back your like of a song.",
        "song_likes",
        must_exist=True,
        missing="You have not liked this song, so cannot unlike it.",
        done="Song unliked.",
    ),
)


@apis.api("List the songs you liked.")
def show_liked_songs(ctx: ToolContext, args: LikedSongsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    check_sort(args.sort_by, ("liked_at", "title"))
    cat = Catalogue(ctx)
    liked = _marked(ctx, user, "song_likes", cat.songs, cat.song)
    return page(sort_rows(liked, args.sort_by), args.page_index, args.page_limit)


apis.add(
    _marking_tool(
        "like_album",
        "Like an album.",
        "album_likes",
        already="You have already liked this album in the past.",
        done="Album liked.",
    ),
    _marking_tool(
        "like_playlist",
        "Like a playlist (yours or a public one).",
        "playlist_likes",
        already="You have already liked this playlist in the past.",
        done="Playlist liked.",
    ),
    _marking_tool(
        "follow_artist",
        "Follow an artist.",
        "artist_follows",
        already="You are already following this artist.",
        done="Artist followed.",
    ),
    _unmarking_tool(
        "unfollow_artist",
        "Stop following an artist.",
        "artist_follows",
        missing="You are already not following this artist.",
        done="Artist unfollowed.",
    ),
)


@apis.api("Tell whether you follow an artist.")
def show_artist_following(ctx: ToolContext, args: AuthArtistArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    _artist(ctx, args.artist_id)
    return {"following": ctx.my(APP, "artist_follows", user, artist_id=args.artist_id) is not None}


@apis.api("List the artists you follow.")
def show_following_artists(ctx: ToolContext, args: AuthPageArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    follows = _marked(ctx, user, "artist_follows", _by_id(ctx, "artists", "artist_id"), _artist_view)
    return page(follows, args.page_index, args.page_limit)


apis.add(
    _marking_tool(
        "add_song_to_library",
        "Save a song in your song library.",
        "library_songs",
        already="The song is already in your library.",
        done="Song added to library.",
    ),
    _unmarking_tool(
        "remove_song_from_library",
        "Take a song out of your song library.",
        "library_songs",
        missing="The song is not in your library.",
        done="Song removed from library.",
    ),
)


@apis.api("List the songs of your song library.")
def show_song_library(ctx: ToolContext, args: AuthPageArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    cat = Catalogue(ctx)
    return page(_marked(ctx, user, "library_songs", cat.songs, cat.song), args.page_index, args.page_limit)


apis.add(
    _marking_tool(
        "add_album_to_library",
        "Save an album in your album library.",
        "library_albums",
        already="The album is already in your library.",
        done="Album added to library.",
    ),
)


@apis.api("List the albums of your album library.")
def show_album_library(ctx: ToolContext, args: AuthPageArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    cat = Catalogue(ctx)
    return page(_marked(ctx, user, "library_albums", cat.albums, cat.album), args.page_index, args.page_limit)


apis.add(
    _marking_tool(
        "download_song",
        "Download a song.",
        "downloaded_songs",
        already="The song is already downloaded.",
        done="Song downloaded.",
    ),
    _unmarking_tool(
        "remove_downloaded_song",
        "Delete a downloaded song.",
        "downloaded_songs",
        missing="The song is not downloaded.",
        done="Song removed from downloads.",
    ),
)


@apis.api("List or search your downloaded songs.")
def show_downloaded_songs(ctx: ToolContext, args: DownloadedSongsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    cat = Catalogue(ctx)
    downloads = _keep(
        _marked(ctx, user, "downloaded_songs", cat.songs, cat.song),
        _date_range("downloaded_at", args.min_downloaded_at, args.max_downloaded_at),
    )
    items = [(cat.song_text(cat.songs[d["song_id"]]), d) for d in downloads]
    return retrieve(items, args, ("downloaded_at",), default_sort="-downloaded_at")


# ---------------------------------------------------------------- playlists


@apis.api("Search the public playlists and your own private ones.")
def search_playlists(ctx: ToolContext, args: SearchPlaylistsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    rows = ctx.rows(APP, "playlists")
    own_private = [p for p in rows if not p.get("is_public") and p.get("user_id") == user["user_id"]]
    public = [p for p in rows if p.get("is_public")]
    found = _keep(
        own_private + public,
        _range("like_count", args.min_like_count, args.max_like_count, 0, MAX_INT),
        _range("rating", args.min_rating, args.max_rating, 0, 5),
    )
    cat = Catalogue(ctx)
    items = [(str(p.get("title", "")), cat.playlist(p)) for p in found]
    return retrieve(items, args, ("like_count", "rating", "created_at"), default_sort="-like_count")


@apis.api("List the playlists you own.")
def show_playlist_library(ctx: ToolContext, args: PlaylistLibraryArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    mine = ctx.mine(APP, "playlists", user)
    if args.is_public is not None:
        mine = [p for p in mine if bool(p.get("is_public")) == args.is_public]
    cat = Catalogue(ctx)
    return [cat.playlist(p) for p in page(mine, args.page_index, args.page_limit)]


@apis.api("Show a playlist (yours or a public one) and its songs.")
def show_playlist(ctx: ToolContext, args: AuthPlaylistArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    playlist = _playlist(ctx, args.playlist_id)
    _may_see(user, playlist)
    return Catalogue(ctx).playlist(playlist, full=True)


@apis.api("Create an empty playlist.")
def create_playlist(ctx: ToolContext, args: CreatePlaylistArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    playlist = ctx.insert(
        APP,
        "playlists",
        {
            "title": args.title,
            "user_id": user["user_id"],
            "is_public": args.is_public,
            "created_at": ctx.timestamp(),
            "rating": 0.0,
            "like_count": 0,
            "review_count": 0,
            "song_ids": [],
        },
        unique=("Playlist", ("title", "user_id")),
    )
    return {"message": "Playlist created.", "playlist_id": playlist["playlist_id"]}


@apis.api("Delete one of your playlists.")
def delete_playlist(ctx: ToolContext, args: AuthPlaylistArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    playlist = _playlist(ctx, args.playlist_id)
    check_owner(user, playlist, "playlist")
    likes = ctx.rows(APP, "playlist_likes")
    likes[:] = [like for like in likes if like.get("playlist_id") != args.playlist_id]
    ctx.remove(APP, "playlists", playlist)
    return {"message": "Playlist deleted."}


@apis.api("Add a song to the end of one of your playlists.")
def add_song_to_playlist(ctx: ToolContext, args: PlaylistSongArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    playlist = _playlist(ctx, args.playlist_id)
    check_owner(user, playlist, "playlist")
    song_ids = playlist.setdefault("song_ids", [])
    if args.song_id in song_ids:
        raise ToolFailed("The song is already in the playlist.")
    ctx.linked(APP, "songs", args.song_id, "PlaylistSong", "song_id")
    song_ids.append(args.song_id)
    return {"message": "Song added to the playlist."}


@apis.api("Take a song out of one of your playlists.")
def remove_song_from_playlist(ctx: ToolContext, args: PlaylistSongArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    playlist = _playlist(ctx, args.playlist_id)
    check_owner(user, playlist, "playlist")
    song_ids = playlist.setdefault("song_ids", [])
    if args.song_id not in song_ids:
        raise ToolFailed("The song is not in the playlist.")
    song_ids.remove(args.song_id)
    return {"message": "Song removed from playlist."}


# ---------------------------------------------------------------- song reviews


def _set_rating(song: Row, old: int | None, new: int | None) -> None:
    """The song's average rating and review count after a review is added (``old`` None),
    changed, or removed (``new`` None), from the stored average."""
    count = int(song.get("review_count") or 0)
    total = float(song.get("rating") or 0.0) * count
    if old is not None:
        total, count = total - old, count - 1
    if new is not None:
        total, count = total + new, count + 1
    song["review_count"] = max(count, 0)
    song["rating"] = round(total / count, 1) if count > 0 else 0.0


@apis.api("List the reviews of a song.")
def show_song_reviews(ctx: ToolContext, args: SongReviewsArgs) -> list[JsonObject]:
    _song(ctx, args.song_id)
    author = None if args.user_email is None else ctx.user_by_email(APP, args.user_email)["user_id"]
    reviews = _keep(
        ctx.rows(APP, "song_reviews"),
        lambda r: r.get("song_id") == args.song_id,
        None if author is None else (lambda r: r.get("user_id") == author),
        _range("rating", args.min_rating, args.max_rating, 1, 5),
    )
    items = [(f"{r.get('title', '')} {r.get('text', '')}", _review_view(ctx, r)) for r in reviews]
    return retrieve(items, args, ("rating", "created_at"))


@apis.api("Rate and review a song (one review per song).")
def review_song(ctx: ToolContext, args: ReviewSongArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    song = ctx.linked(APP, "songs", args.song_id, "SongReview", "song_id")
    review = ctx.insert(
        APP,
        "song_reviews",
        {
            "song_id": args.song_id,
            "user_id": user["user_id"],
            "rating": args.rating,
            "title": args.title,
            "text": args.text,
            "created_at": ctx.timestamp(),
        },
        unique=("SongReview", ("song_id", "user_id")),
    )
    _set_rating(song, None, args.rating)
    return {"message": "Added a new song review.", "song_review_id": review["song_review_id"]}


@apis.api("Show one song review.")
def show_song_review(ctx: ToolContext, args: ReviewArgs) -> JsonObject:
    return _review_view(ctx, ctx.find(APP, "song_reviews", args.review_id, "song review"))


@apis.api("Change your review of a song.")
def update_song_review(ctx: ToolContext, args: UpdateReviewArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    review = ctx.owned(APP, "song_reviews", args.review_id, "song review", user)
    if args.rating is not None:
        song = ctx.get(APP, "songs", review.get("song_id"))
        if song is not None:
            _set_rating(song, int(review.get("rating") or 0), args.rating)
    update_fields(review, args, "rating", "title", "text")
    return {"message": "Updated the song review."}


# ---------------------------------------------------------------- music player


def _player(ctx: ToolContext, user_id: Any, *, create: bool) -> Row:
    """The user's music player; a new empty one (kept in the state only when ``create``)."""
    for row in ctx.rows(APP, "music_players"):
        if row.get("user_id") == user_id:
            row.setdefault("queue_song_ids", [])
            return row
    fresh: Row = {
        "user_id": user_id,
        "queue_song_ids": [],
        "cursor_position": None,
        "is_playing": False,
        "is_looping": False,
        "played_seconds": 0,
    }
    return ctx.insert(APP, "music_players", fresh) if create else fresh


def _cursor(player: Row) -> int:
    return int(player.get("cursor_position") or 0)


def _queue_songs(
    ctx: ToolContext, album_id: int | None, playlist_id: int | None, verb: str
) -> tuple[str, list[int]]:
    """The songs an album or playlist puts in the queue ("Album"/"Playlist", ids)."""
    if album_id is not None:
        _album(ctx, album_id)
        ids = [s["song_id"] for s in Catalogue(ctx).album_songs(album_id)]
        if not ids:
            raise ToolFailed(f"The album is empty, {verb}.")
        return "Album", ids
    assert playlist_id is not None
    ids = [int(i) for i in _playlist(ctx, playlist_id).get("song_ids", [])]
    if not ids:
        raise ToolFailed(f"The playlist is empty, {verb}.")
    return "Playlist", ids


@apis.api("Play a song, album, playlist or queue position (at most one), else the current song.")
def play_music(ctx: ToolContext, args: PlayMusicArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    given = sum(v is not None for v in (args.queue_position, args.song_id, args.album_id, args.playlist_id))
    if given > 1:
        raise ToolFailed(
            "Either none or exactly one of queue_position, song_id, album_id or playlist_id "
            f"should be passed, found {given}."
        )
    player = _player(ctx, user["user_id"], create=True)
    queue: list[int] = player["queue_song_ids"]
    if args.song_id is not None:
        _song(ctx, args.song_id)
        queue.insert(0, args.song_id)
        player["cursor_position"] = 0
    elif args.album_id is not None or args.playlist_id is not None:
        _, ids = _queue_songs(ctx, args.album_id, args.playlist_id, "cannot play it")
        queue[:] = ids
        player["cursor_position"] = 0
    elif args.queue_position is not None:
        if not queue:
            raise ToolFailed("The song queue is empty, cannot play it.")
        if args.queue_position >= len(queue):
            raise ToolFailed(
                f"The queue position ({args.queue_position}) is out of range, "
                f"the queue has only {len(queue)} songs."
            )
        player["cursor_position"] = args.queue_position
    elif not queue:
        raise ToolFailed("The song queue is empty, cannot play it.")
    song = _song(ctx, queue[_cursor(player)])
    player["is_playing"] = True
    return {"message": f"Song ({song.get('title')}) is now playing.", "song_id": song["song_id"]}


def _step(ctx: ToolContext, args: AuthArgs, forward: bool) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    word = "next" if forward else "previous"
    player = _player(ctx, user["user_id"], create=True)
    queue = player["queue_song_ids"]
    if not queue:
        raise ToolFailed(f"The song queue is empty, cannot move to the {word} song.")
    if len(queue) == 1:
        raise ToolFailed(f"There is only one song in the queue, cannot move to the {word} song.")
    player["cursor_position"] = (_cursor(player) + (1 if forward else -1)) % len(queue)
    player["played_seconds"] = 0
    return {"message": f"Moved to the {word} song in the queue.", "song_id": queue[player["cursor_position"]]}


@apis.api("Go back to the previous song of the queue.")
def previous_song(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    return _step(ctx, args, forward=False)


@apis.api("Skip to the next song of the queue.")
def next_song(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    return _step(ctx, args, forward=True)


@apis.api("Show the song at the queue's cursor and the player's state.")
def show_current_song(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    player = _player(ctx, user["user_id"], create=False)
    queue = player["queue_song_ids"]
    if not queue:
        raise ToolFailed("The song queue is empty.")
    song = _song(ctx, queue[_cursor(player)])
    return Catalogue(ctx).song(song) | {
        "played_seconds": player.get("played_seconds", 0),
        "is_playing": bool(player.get("is_playing", False)),
        "is_looping": bool(player.get("is_looping", False)),
    }


@apis.api("List the songs of the player's queue.")
def show_song_queue(ctx: ToolContext, args: AuthArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    player = _player(ctx, user["user_id"], create=False)
    queue = player["queue_song_ids"]
    cat = Catalogue(ctx)
    current = queue[_cursor(player)] if queue and player.get("cursor_position") is not None else None
    playing = bool(player.get("is_playing", False))
    out = []
    for position, song_id in enumerate(queue):
        song = cat.songs.get(song_id)
        if song is None:
            raise not_found("song", song_id)
        out.append(
            cat.song(song)
            | {
                "position": position,
                "is_current": song_id == current,
                "is_playing": playing and song_id == current,
            }
        )
    return out


@apis.api("Add a song, an album or a playlist (exactly one) to the end of the queue.")
def add_to_queue(ctx: ToolContext, args: AddToQueueArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    given = sum(v is not None for v in (args.song_id, args.album_id, args.playlist_id))
    if given != 1:
        raise ToolFailed(f"Exactly one of song_id, album_id or playlist_id should be passed, found {given}.")
    player = _player(ctx, user["user_id"], create=True)
    if args.song_id is not None:
        _song(ctx, args.song_id)
        what, ids = "Song", [args.song_id]
    else:
        what, ids = _queue_songs(ctx, args.album_id, args.playlist_id, "nothing to add to the queue")
    player["queue_song_ids"].extend(ids)
    if player.get("cursor_position") is None:
        player["cursor_position"] = 0
    return {"message": f"{what} added to the queue."}


@apis.api("Remove the song at a position of the queue.")
def remove_song_from_queue(ctx: ToolContext, args: QueuePositionArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    player = _player(ctx, user["user_id"], create=True)
    queue = player["queue_song_ids"]
    if not queue:
        raise ToolFailed("The song queue is empty, cannot remove a song.")
    if not 0 <= args.position < len(queue):
        raise ToolFailed(
            f"The song queue has {len(queue)} songs. So the position should be >= 0 and < {len(queue)}."
        )
    queue.pop(args.position)
    cursor = _cursor(player)
    if not queue:
        player["cursor_position"] = None
    elif cursor > args.position:
        player["cursor_position"] = cursor - 1
    elif cursor == args.position:
        player["cursor_position"] = args.position % len(queue)
    return {"message": f"Removed song at position {args.position} from the song queue."}


# ---------------------------------------------------------------- the tools


TOOLS = apis.tools
