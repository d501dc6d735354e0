"""The spotify app on AppWorld's tool surface: accounts, catalogue, likes, follows, libraries,
downloads, playlists, song reviews and the music player."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apps import AppSession
from world.episodes.apps import state_value
from world.episodes.apps.base import issue_token

LAURA = "la-mcco@gmail.com"
LES = "les_ball@gmail.com"
PASSWORD = "wjhPa4l"
LES_PASSWORD = "(dgokRb"


def song(
    song_id: int, title: str, album_id: int | None, artist_ids: list[int], genre: str, **extra: Any
) -> Any:
    return {
        "song_id": song_id,
        "title": title,
        "album_id": album_id,
        "artist_ids": artist_ids,
        "duration": 200 + song_id,
        "release_date": f"2022-0{1 + song_id % 9}-01T00:00:00",
        "genre": genre,
        "play_count": 10 * song_id,
        "rating": 0.0,
        "like_count": 0,
        "review_count": 0,
        **extra,
    }


SEED: dict[str, Any] = {
    "start_time": "2025-05-05T09:00:00",
    "people": [
        {"first_name": "Laura", "last_name": "Mccoy", "email": LAURA, "accounts": {"spotify": PASSWORD}},
        {
            "first_name": "Les",
            "last_name": "Ball",
            "email": LES,
            "accounts": {"spotify": LES_PASSWORD, "gmail": "g"},
        },
    ],
    "apps": {
        "spotify": {
            "artists": [
                {
                    "artist_id": 5,
                    "name": "Ava Morgan",
                    "genre": "classical",
                    "follower_count": 120,
                    "created_at": "2020-01-01T00:00:00",
                },
                {
                    "artist_id": 6,
                    "name": "The Night Owls",
                    "genre": "rock",
                    "follower_count": 40,
                    "created_at": "2021-01-01T00:00:00",
                },
            ],
            "albums": [
                {
                    "album_id": 3,
                    "title": "Echoes of Eternity",
                    "artist_ids": [5],
                    "release_date": "2021-03-01T00:00:00",
                    "genre": "classical",
                    "rating": 4.8,
                    "like_count": 7,
                    "review_count": 3,
                },
                {
                    "album_id": 4,
                    "title": "Loud Nights",
                    "artist_ids": [6],
                    "release_date": "2023-06-01T00:00:00",
                    "genre": "rock",
                    "rating": 3.1,
                    "like_count": 2,
                    "review_count": 1,
                },
            ],
            "songs": [
                song(
                    54, "Heartstrings Symphony", 3, [5], "classical", rating=4.0, review_count=1, like_count=3
                ),
                song(77, "Whispers of the Soul", 3, [5], "classical"),
                song(78, "A Love That Never Was", None, [5], "classical"),
                song(90, "Crash the Gate", 4, [6], "rock", rating=2.0, review_count=2),
            ],
            "playlists": [
                {
                    "playlist_id": 31,
                    "title": "Starry Night Serenades",
                    "user_id": 2,
                    "is_public": False,
                    "created_at": "2024-01-01T00:00:00",
                    "rating": 0.0,
                    "like_count": 0,
                    "review_count": 0,
                    "song_ids": [77],
                },
                {
                    "playlist_id": 32,
                    "title": "Gym Mix",
                    "user_id": 2,
                    "is_public": True,
                    "created_at": "2024-02-01T00:00:00",
                    "rating": 4.0,
                    "like_count": 9,
                    "review_count": 0,
                    "song_ids": [90, 54],
                },
            ],
            "song_reviews": [
                {
                    "song_review_id": 8,
                    "song_id": 54,
                    "user_id": 2,
                    "rating": 4,
                    "title": "Lovely",
                    "text": "Calm strings",
                    "created_at": "2024-03-01T00:00:00",
                },
            ],
            "song_likes": [
                {"song_like_id": 1, "user_id": 2, "song_id": 77, "liked_at": "2024-04-01T00:00:00"}
            ],
        }
    },
}


@pytest.fixture
def app() -> AppSession:
    return AppSession(SEED)


def sp(api: str) -> str:
    return f"spotify__{api}"


def laura(app: AppSession) -> str:
    return app.login("spotify", LAURA, PASSWORD)


def les(app: AppSession) -> str:
    return app.login("spotify", LES, LES_PASSWORD)


# ---------------------------------------------------------------- accounts


def test_login_logout_and_foreign_tokens(app: AppSession) -> None:
    assert app.refused(sp("login"), "unauthorized", username=LAURA, password="nope") == "Invalid credentials"
    token = laura(app)
    assert app.ok(sp("show_liked_songs"), access_token=token) == []
    assert app.ok(sp("logout"), access_token=token) == {"message": "Successfully logged out."}
    assert "spotify API endpoint" in app.refused(sp("show_liked_songs"), "unauthorized", access_token=token)
    # A token of another app (issued by gmail) is refused by spotify.
    gmail_token = issue_token(app.state.apps.setdefault("gmail", {}), "gmail", 2)
    app.refused(sp("like_song"), "unauthorized", access_token=gmail_token, song_id=54)
    app.refused(sp("like_song"), "invalid_args", song_id=54)


# ---------------------------------------------------------------- catalogue


def test_songs_search_ranks_filters_sorts_and_shows(app: AppSession) -> None:
    assert app.ok(sp("show_genres")) == ["classical", "rock"]
    found = app.ok(sp("search_songs"), query="heartstrings")
    assert [s["song_id"] for s in found] == [54, 77, 78, 90]  # a query ranks, it never filters
    assert set(found[0]) == {
        "song_id",
        "title",
        "album_id",
        "album_title",
        "duration",
        "artists",
        "release_date",
        "genre",
        "play_count",
        "rating",
        "like_count",
        "review_count",
        "shareable_link",
    }
    assert found[0]["album_title"] == "Echoes of Eternity"
    assert found[0]["artists"] == [{"id": 5, "name": "Ava Morgan"}]
    assert [s["song_id"] for s in app.ok(sp("search_songs"), query="night owls")][:1] == [90]  # artist names
    assert [s["song_id"] for s in app.ok(sp("search_songs"), genre="Rock")] == [90]
    assert [s["song_id"] for s in app.ok(sp("search_songs"), artist_id=5, page_limit=2)] == [54, 77]
    assert [s["song_id"] for s in app.ok(sp("search_songs"), album_id=3, min_rating=3.5)] == [54]
    assert [s["song_id"] for s in app.ok(sp("search_songs"), sort_by="-play_count")] == [90, 78, 77, 54]
    assert [s["song_id"] for s in app.ok(sp("search_songs"), min_release_date="2022-07-01")] == [78]
    assert [s["song_id"] for s in app.ok(sp("search_songs"), page_index=1, page_limit=3)] == [90]
    assert "must be one of rating, like_count, play_count" in app.refused(
        sp("search_songs"), "failed", sort_by="-title"
    )
    assert (
        app.refused(sp("search_songs"), "failed", sort_by="rating")
        == "The sort_by parameter must start with + or -."
    )
    assert "Use YYYY-MM-DD" in app.refused(sp("search_songs"), "invalid_args", min_release_date="May 2022")
    app.refused(sp("search_songs"), "invalid_args", page_limit=21)

    shown = app.ok(sp("show_song"), song_id=54)
    assert shown["shareable_link"] == "https://spotify.com/songs/54"
    assert (shown["rating"], shown["like_count"], shown["review_count"]) == (4.0, 3, 1)
    assert app.refused(sp("show_song"), "not_found", song_id=9999) == "The song with id 9999 does not exist."


def test_albums_and_artists(app: AppSession) -> None:
    albums = app.ok(sp("search_albums"), query="eternity")
    assert albums[0]["album_id"] == 3 and albums[0]["song_ids"] == [54, 77]
    assert set(albums[0]) == {
        "album_id",
        "title",
        "genre",
        "artists",
        "rating",
        "like_count",
        "review_count",
        "release_date",
        "song_ids",
    }
    assert [a["album_id"] for a in app.ok(sp("search_albums"), genre="rock")] == [4]
    assert [a["album_id"] for a in app.ok(sp("search_albums"), sort_by="-rating")] == [3, 4]
    album = app.ok(sp("show_album"), album_id=3)
    assert album["songs"] == [
        {"id": 54, "title": "Heartstrings Symphony", "artist_ids": [5]},
        {"id": 77, "title": "Whispers of the Soul", "artist_ids": [5]},
    ]
    assert album["shareable_link"] == "https://spotify.com/albums/3"
    assert app.refused(sp("show_album"), "not_found", album_id=1) == "The album with id 1 does not exist."

    artists = app.ok(sp("search_artists"), query="ava")
    assert artists[0] == {
        "artist_id": 5,
        "name": "Ava Morgan",
        "genre": "classical",
        "follower_count": 120,
        "created_at": "2020-01-01T00:00:00",
    }
    assert [a["artist_id"] for a in app.ok(sp("search_artists"), min_follower_count=100)] == [5]
    assert [a["artist_id"] for a in app.ok(sp("search_artists"), sort_by="+follower_count")] == [6, 5]
    assert app.ok(sp("show_artist"), artist_id=6)["name"] == "The Night Owls"
    assert (
        app.refused(sp("show_artist"), "not_found", artist_id=99) == "The artist with id 99 does not exist."
    )


# ---------------------------------------------------------------- likes and follows


def test_like_and_unlike_song(app: AppSession) -> None:
    token = laura(app)
    assert app.ok(sp("like_song"), access_token=token, song_id=54) == {"message": "Song liked."}
    like = state_value(app.state, "apps.spotify.song_likes.2")
    assert like == {"song_like_id": 2, "user_id": 1, "song_id": 54, "liked_at": "2025-05-05T09:00:00"}
    assert app.ok(sp("show_song"), song_id=54)["like_count"] == 4
    assert (
        app.refused(sp("like_song"), "failed", access_token=token, song_id=54)
        == "You have already liked this song in the past."
    )
    assert app.refused(sp("like_song"), "not_found", access_token=token, song_id=9999) == (
        "The song with id 9999 does not exist."
    )
    liked = app.ok(sp("show_liked_songs"), access_token=token)
    assert liked == [
        {
            "song_id": 54,
            "title": "Heartstrings Symphony",
            "album_id": 3,
            "album_title": "Echoes of Eternity",
            "duration": 254,
            "artists": [{"id": 5, "name": "Ava Morgan"}],
            "liked_at": "2025-05-05T09:00:00",
        }
    ]
    # Les's seeded like is his own.
    assert [s["song_id"] for s in app.ok(sp("show_liked_songs"), access_token=les(app))] == [77]
    assert "liked_at, title" in app.refused(
        sp("show_liked_songs"), "failed", access_token=token, sort_by="-rating"
    )
    assert app.ok(sp("unlike_song"), access_token=token, song_id=54) == {"message": "Song unliked."}
    assert app.ok(sp("show_song"), song_id=54)["like_count"] == 3
    assert app.refused(sp("unlike_song"), "failed", access_token=token, song_id=54) == (
        "You have not liked this song, so cannot unlike it."
    )


def test_like_album_and_playlist(app: AppSession) -> None:
    token = laura(app)
    assert app.ok(sp("like_album"), access_token=token, album_id=3) == {"message": "Album liked."}
    assert app.ok(sp("show_album"), album_id=3)["like_count"] == 8
    assert app.refused(sp("like_album"), "failed", access_token=token, album_id=3) == (
        "You have already liked this album in the past."
    )
    app.refused(sp("like_album"), "not_found", access_token=token, album_id=77)

    assert app.ok(sp("like_playlist"), access_token=token, playlist_id=32) == {"message": "Playlist liked."}
    assert state_value(app.state, "apps.spotify.playlists.32.like_count") == 10
    assert app.refused(sp("like_playlist"), "failed", access_token=token, playlist_id=32) == (
        "You have already liked this playlist in the past."
    )
    assert "is not public, and does not belong to you" in app.refused(
        sp("like_playlist"), "failed", access_token=token, playlist_id=31
    )


def test_follow_and_unfollow_artist(app: AppSession) -> None:
    token = laura(app)
    assert app.ok(sp("show_artist_following"), access_token=token, artist_id=5) == {"following": False}
    assert app.ok(sp("follow_artist"), access_token=token, artist_id=5) == {"message": "Artist followed."}
    assert app.ok(sp("show_artist_following"), access_token=token, artist_id=5) == {"following": True}
    assert app.ok(sp("show_artist"), artist_id=5)["follower_count"] == 121
    assert (
        app.refused(sp("follow_artist"), "failed", access_token=token, artist_id=5)
        == "You are already following this artist."
    )
    app.refused(sp("follow_artist"), "not_found", access_token=token, artist_id=404)
    app.refused(sp("show_artist_following"), "not_found", access_token=token, artist_id=404)
    following = app.ok(sp("show_following_artists"), access_token=token)
    assert [(a["artist_id"], a["followed_at"]) for a in following] == [(5, "2025-05-05T09:00:00")]
    assert app.ok(sp("unfollow_artist"), access_token=token, artist_id=5) == {"message": "Artist unfollowed."}
    assert app.ok(sp("show_artist"), artist_id=5)["follower_count"] == 120
    assert app.refused(sp("unfollow_artist"), "failed", access_token=token, artist_id=5) == (
        "You are already not following this artist."
    )


# ---------------------------------------------------------------- libraries and downloads


def test_song_and_album_libraries(app: AppSession) -> None:
    token = laura(app)
    assert app.ok(sp("add_song_to_library"), access_token=token, song_id=78) == {
        "message": "Song added to library."
    }
    assert app.refused(sp("add_song_to_library"), "failed", access_token=token, song_id=78) == (
        "The song is already in your library."
    )
    app.refused(sp("add_song_to_library"), "not_found", access_token=token, song_id=5)
    library = app.ok(sp("show_song_library"), access_token=token)
    assert [(s["song_id"], s["album_id"], s["album_title"], s["added_at"]) for s in library] == [
        (78, None, None, "2025-05-05T09:00:00")
    ]
    assert app.ok(sp("remove_song_from_library"), access_token=token, song_id=78) == {
        "message": "Song removed from library."
    }
    assert app.ok(sp("show_song_library"), access_token=token) == []

    assert app.ok(sp("add_album_to_library"), access_token=token, album_id=4) == {
        "message": "Album added to library."
    }
    assert app.refused(sp("add_album_to_library"), "failed", access_token=token, album_id=4) == (
        "The album is already in your library."
    )
    app.refused(sp("add_album_to_library"), "not_found", access_token=token, album_id=40)
    albums = app.ok(sp("show_album_library"), access_token=token)
    assert [(a["album_id"], a["song_ids"], a["added_at"]) for a in albums] == [
        (4, [90], "2025-05-05T09:00:00")
    ]
    assert app.ok(sp("show_album_library"), access_token=les(app)) == []


def test_downloads(app: AppSession) -> None:
    token = laura(app)
    assert app.ok(sp("download_song"), access_token=token, song_id=90) == {"message": "Song downloaded."}
    assert app.ok(sp("download_song"), access_token=token, song_id=54) == {"message": "Song downloaded."}
    assert app.refused(sp("download_song"), "failed", access_token=token, song_id=90) == (
        "The song is already downloaded."
    )
    app.refused(sp("download_song"), "not_found", access_token=token, song_id=1)
    downloads = app.ok(sp("show_downloaded_songs"), access_token=token)
    assert [(s["song_id"], s["downloaded_at"]) for s in downloads] == [
        (90, "2025-05-05T09:00:00"),
        (54, "2025-05-05T09:00:00"),
    ]
    assert [
        s["song_id"] for s in app.ok(sp("show_downloaded_songs"), access_token=token, query="heartstrings")
    ] == [
        54,
        90,
    ]
    assert app.ok(sp("show_downloaded_songs"), access_token=token, max_downloaded_at="2025-05-04") == []
    assert app.ok(sp("remove_downloaded_song"), access_token=token, song_id=90) == {
        "message": "Song removed from downloads."
    }
    assert app.refused(sp("remove_downloaded_song"), "failed", access_token=token, song_id=90) == (
        "The song is not downloaded."
    )
    assert [s["song_id"] for s in app.ok(sp("show_downloaded_songs"), access_token=token)] == [54]


# ---------------------------------------------------------------- playlists


def test_playlists_owned_public_and_private(app: AppSession) -> None:
    owner, other = les(app), laura(app)
    shown = app.ok(sp("show_playlist"), access_token=owner, playlist_id=31)
    assert shown["songs"] == [{"id": 77, "title": "Whispers of the Soul", "artist_ids": [5]}]
    assert shown["owner"] == {"name": "Les Ball", "email": LES}
    assert shown["shareable_link"] is None and shown["is_public"] is False
    assert "is not public" in app.refused(sp("show_playlist"), "failed", access_token=other, playlist_id=31)
    public = app.ok(sp("show_playlist"), access_token=other, playlist_id=32)
    assert public["shareable_link"] == "https://spotify.com/playlists/32"
    assert [s["id"] for s in public["songs"]] == [90, 54]
    app.refused(sp("show_playlist"), "not_found", access_token=owner, playlist_id=99)

    library = app.ok(sp("show_playlist_library"), access_token=owner)
    assert [(p["playlist_id"], p["song_ids"]) for p in library] == [(31, [77]), (32, [90, 54])]
    assert [
        p["playlist_id"] for p in app.ok(sp("show_playlist_library"), access_token=owner, is_public=False)
    ] == [31]
    assert app.ok(sp("show_playlist_library"), access_token=other) == []

    # Search: the owner's private playlists and every public one; others never see a private one.
    assert [p["playlist_id"] for p in app.ok(sp("search_playlists"), access_token=owner)] == [32, 31]
    assert [p["playlist_id"] for p in app.ok(sp("search_playlists"), access_token=owner, query="starry")] == [
        31,
        32,
    ]
    assert [p["playlist_id"] for p in app.ok(sp("search_playlists"), access_token=other, query="starry")] == [
        32
    ]


def test_create_fill_and_delete_playlist(app: AppSession) -> None:
    owner, other = les(app), laura(app)
    created = app.ok(sp("create_playlist"), access_token=owner, title="Sleep", is_public=True)
    assert created == {"message": "Playlist created.", "playlist_id": 33}
    assert state_value(app.state, "apps.spotify.playlists.33.user_id") == 2
    assert app.refused(sp("create_playlist"), "failed", access_token=owner, title="Sleep") == (
        "Playlist with this title and user_id already exists."
    )
    app.refused(sp("create_playlist"), "invalid_args", access_token=owner, title="")

    for song_id in (78, 54):
        assert app.ok(sp("add_song_to_playlist"), access_token=owner, playlist_id=33, song_id=song_id) == {
            "message": "Song added to the playlist."
        }
    assert state_value(app.state, "apps.spotify.playlists.33.song_ids") == [78, 54]
    assert app.refused(
        sp("add_song_to_playlist"), "failed", access_token=owner, playlist_id=33, song_id=78
    ) == ("The song is already in the playlist.")
    assert "non-existent object via song_id=999" in app.refused(
        sp("add_song_to_playlist"), "failed", access_token=owner, playlist_id=33, song_id=999
    )
    assert app.refused(
        sp("add_song_to_playlist"), "failed", access_token=other, playlist_id=33, song_id=77
    ) == ("The given playlist does not belong to you, so you cannot access it.")
    app.refused(sp("add_song_to_playlist"), "not_found", access_token=owner, playlist_id=300, song_id=77)

    assert app.ok(sp("remove_song_from_playlist"), access_token=owner, playlist_id=33, song_id=78) == {
        "message": "Song removed from playlist."
    }
    assert app.refused(
        sp("remove_song_from_playlist"), "failed", access_token=owner, playlist_id=33, song_id=78
    ) == ("The song is not in the playlist.")
    assert [s["id"] for s in app.ok(sp("show_playlist"), access_token=other, playlist_id=33)["songs"]] == [54]

    app.ok(sp("like_playlist"), access_token=other, playlist_id=33)
    app.refused(sp("delete_playlist"), "failed", access_token=other, playlist_id=33)
    assert app.ok(sp("delete_playlist"), access_token=owner, playlist_id=33) == {
        "message": "Playlist deleted."
    }
    app.refused(sp("show_playlist"), "not_found", access_token=owner, playlist_id=33)
    assert all(like["playlist_id"] != 33 for like in app.state.apps["spotify"]["playlist_likes"])


# ---------------------------------------------------------------- song reviews


def test_review_song_once_and_update(app: AppSession) -> None:
    token = laura(app)
    posted = app.ok(
        sp("review_song"), access_token=token, song_id=54, rating=5, title="Wow", text="Beautiful melody"
    )
    assert posted == {"message": "Added a new song review.", "song_review_id": 9}
    song = app.ok(sp("show_song"), song_id=54)
    assert (song["rating"], song["review_count"]) == (4.5, 2)
    assert app.refused(sp("review_song"), "failed", access_token=token, song_id=54, rating=3) == (
        "SongReview with this song_id and user_id already exists."
    )
    assert app.outcomes[-1].result == {
        "response": {"message": "SongReview with this song_id and user_id already exists."}
    }
    assert app.refused(sp("review_song"), "failed", access_token=token, song_id=9999, rating=5) == (
        "The SongReview object is linked to a non-existent object via song_id=9999."
    )
    app.refused(sp("review_song"), "invalid_args", access_token=token, song_id=77, rating=9)
    app.refused(sp("review_song"), "invalid_args", access_token=token, song_id=77)

    review = app.ok(sp("show_song_review"), review_id=9)
    assert review == {
        "song_review_id": 9,
        "song_id": 54,
        "rating": 5,
        "title": "Wow",
        "text": "Beautiful melody",
        "created_at": "2025-05-05T09:00:00",
        "user": {"name": "Laura Mccoy", "email": LAURA},
    }
    assert (
        app.refused(sp("show_song_review"), "not_found", review_id=1)
        == "The song review with id 1 does not exist."
    )

    reviews = app.ok(sp("show_song_reviews"), song_id=54)
    assert [r["song_review_id"] for r in reviews] == [8, 9]
    assert [r["song_review_id"] for r in app.ok(sp("show_song_reviews"), song_id=54, user_email=LAURA)] == [9]
    assert [r["song_review_id"] for r in app.ok(sp("show_song_reviews"), song_id=54, min_rating=5)] == [9]
    assert [r["song_review_id"] for r in app.ok(sp("show_song_reviews"), song_id=54, sort_by="-rating")] == [
        9,
        8,
    ]
    assert [r["song_review_id"] for r in app.ok(sp("show_song_reviews"), song_id=54, query="calm")] == [8, 9]
    assert app.refused(sp("show_song_reviews"), "not_found", song_id=54, user_email="ghost@example.com") == (
        "The user with email ghost@example.com does not exist."
    )
    app.refused(sp("show_song_reviews"), "not_found", song_id=1)

    assert app.ok(sp("update_song_review"), access_token=token, review_id=9, rating=3) == {
        "message": "Updated the song review."
    }
    assert state_value(app.state, "apps.spotify.song_reviews.9") == {
        "song_review_id": 9,
        "song_id": 54,
        "user_id": 1,
        "rating": 3,
        "title": "Wow",
        "text": "Beautiful melody",
        "created_at": "2025-05-05T09:00:00",
    }
    assert app.ok(sp("show_song"), song_id=54)["rating"] == 3.5
    assert app.refused(
        sp("update_song_review"), "failed", access_token=token, review_id=8, text="mine now"
    ) == ("The given song review does not belong to you, so you cannot access it.")
    app.refused(sp("update_song_review"), "not_found", access_token=token, review_id=77, text="x")


# ---------------------------------------------------------------- music player


def test_music_player_queue(app: AppSession) -> None:
    token = laura(app)
    assert app.refused(sp("show_current_song"), "failed", access_token=token) == "The song queue is empty."
    assert app.ok(sp("show_song_queue"), access_token=token) == []
    assert not app.state.apps["spotify"].get("music_players")  # reading made no player
    assert (
        app.refused(sp("play_music"), "failed", access_token=token)
        == "The song queue is empty, cannot play it."
    )
    assert app.refused(sp("previous_song"), "failed", access_token=token) == (
        "The song queue is empty, cannot move to the previous song."
    )

    assert app.ok(sp("play_music"), access_token=token, song_id=78) == {
        "message": "Song (A Love That Never Was) is now playing.",
        "song_id": 78,
    }
    assert app.refused(sp("next_song"), "failed", access_token=token) == (
        "There is only one song in the queue, cannot move to the next song."
    )
    assert app.ok(sp("add_to_queue"), access_token=token, album_id=3) == {
        "message": "Album added to the queue."
    }
    assert app.ok(sp("add_to_queue"), access_token=token, song_id=90) == {
        "message": "Song added to the queue."
    }
    assert "found 2" in app.refused(sp("add_to_queue"), "failed", access_token=token, song_id=90, album_id=3)
    assert "found 0" in app.refused(sp("add_to_queue"), "failed", access_token=token)
    app.refused(sp("add_to_queue"), "not_found", access_token=token, playlist_id=999)

    queue = app.ok(sp("show_song_queue"), access_token=token)
    assert [(s["song_id"], s["position"], s["is_current"], s["is_playing"]) for s in queue] == [
        (78, 0, True, True),
        (54, 1, False, False),
        (77, 2, False, False),
        (90, 3, False, False),
    ]
    current = app.ok(sp("show_current_song"), access_token=token)
    assert current["song_id"] == 78 and current["is_playing"] is True and current["played_seconds"] == 0
    assert set(current) >= {"title", "album_id", "album_title", "duration", "artists", "is_looping"}

    # previous_song wraps around to the end of the queue.
    assert app.ok(sp("previous_song"), access_token=token) == {
        "message": "Moved to the previous song in the queue.",
        "song_id": 90,
    }
    assert app.ok(sp("next_song"), access_token=token)["song_id"] == 78
    assert app.ok(sp("play_music"), access_token=token, queue_position=2)["song_id"] == 77
    assert "out of range" in app.refused(sp("play_music"), "failed", access_token=token, queue_position=9)
    assert "found 2" in app.refused(sp("play_music"), "failed", access_token=token, song_id=54, album_id=3)

    assert app.ok(sp("remove_song_from_queue"), access_token=token, position=0) == {
        "message": "Removed song at position 0 from the song queue."
    }
    assert app.ok(sp("show_current_song"), access_token=token)["song_id"] == 77  # the cursor follows its song
    assert app.refused(sp("remove_song_from_queue"), "failed", access_token=token, position=3) == (
        "The song queue has 3 songs. So the position should be >= 0 and < 3."
    )

    # Playing a playlist replaces the queue.
    les_token = les(app)
    assert app.ok(sp("play_music"), access_token=les_token, playlist_id=32)["song_id"] == 90
    assert [s["song_id"] for s in app.ok(sp("show_song_queue"), access_token=les_token)] == [90, 54]
    player = next(p for p in app.state.apps["spotify"]["music_players"] if p["user_id"] == 2)
    assert player["queue_song_ids"] == [90, 54] and player["cursor_position"] == 0
    app.ok(sp("create_playlist"), access_token=les_token, title="Empty")
    assert app.refused(sp("play_music"), "failed", access_token=les_token, playlist_id=33) == (
        "The playlist is empty, cannot play it."
    )
