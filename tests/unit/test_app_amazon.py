"""The amazon app on AppWorld's surface: accounts, catalogue, reviews and questions, cart, wish
list, cards, addresses and orders, with AppWorld's refusals and side effects."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.apps import AppSession
from world.episodes.apps import state_diff, state_value

LAURA = "la-mcco@gmail.com"
BOB = "bob.stone@example.com"
RITA = "rita@example.com"
NOTIFIER = "notifications@amazon.com"

ORDER_KEYS = {
    "order_id",
    "address_id",
    "payment_card_id",
    "name",
    "tax",
    "delivery_fee",
    "gift_wrap_fee",
    "discount",
    "created_at",
    "address_text",
    "payment_card_digits",
    "paid_amount",
    "order_items",
}
ORDER_ITEM_KEYS = {
    "product_id",
    "ordered_quantity",
    "returned_quantity",
    "gift_wrap_quantity",
    "price",
    "expected_delivery_at",
    "delivered_at",
}


def _product(pid: int, name: str, kind: str, price: float, **more: Any) -> dict[str, Any]:
    record = {
        "product_id": pid,
        "seller_id": 1,
        "product_type": kind,
        "name": name,
        "description": f"A {kind}.",
        "price": price,
        "delivery_days": 3,
        "inventory_quantity": 10,
        "weight": 1.0,
        "length": 10.0,
        "width": 5.0,
        "height": 2.0,
        "color": "black",
        "relative_size": "medium",
        "rating": 4.0,
    }
    return record | more


def _card(cid: int, user_id: int, name: str, number: int, balance: float) -> dict[str, Any]:
    return {
        "payment_card_id": cid,
        "user_id": user_id,
        "card_name": name,
        "owner_name": "Card Owner",
        "card_number": number,
        "expiry_year": 2028,
        "expiry_month": 5,
        "cvv_number": 123,
        "balance": balance,
    }


PRODUCT_KEYS = set(_product(1, "Lamp", "lamp", 1.0)) | {
    "num_product_reviews",
    "num_product_questions",
    "variations",
}
"""A product as AppWorld shows it: every field of its record, and what is counted from others."""
CARD_KEYS = set(_card(1, 1, "Visa", 1, 0.0)) - {"user_id", "balance"}
"""A payment card as AppWorld shows it: its record without the owner's id and the balance."""


def _address(aid: int, user_id: int, name: str, street: str) -> dict[str, Any]:
    return {
        "address_id": aid,
        "user_id": user_id,
        "name": name,
        "street_address": street,
        "city": "Portland",
        "state": "OR",
        "country": "USA",
        "zip_code": 97001,
    }


SEED: dict[str, Any] = {
    "start_time": "2025-05-05T09:00:00",
    "people": [
        {
            "user_id": 1,
            "first_name": "Laura",
            "last_name": "Mccoy",
            "email": LAURA,
            "accounts": {"amazon": "v[=NdO3", "gmail": "g-pass-1"},
        },
        {
            "user_id": 2,
            "first_name": "Bob",
            "last_name": "Stone",
            "email": BOB,
            "accounts": {"amazon": "bob-pass"},
        },
        {
            "user_id": 3,
            "first_name": "Amazon",
            "last_name": "Notifications",
            "email": NOTIFIER,
            "accounts": ["gmail"],
        },
        {"user_id": 4, "first_name": "Rita", "last_name": "Reviewer", "email": RITA, "accounts": ["amazon"]},
    ],
    "apps": {
        "amazon": {
            "sellers": [
                {"seller_id": 1, "name": "Acme Outdoor", "rating": 4.2},
                {"seller_id": 2, "name": "HomeGoods Company", "rating": 3.5},
            ],
            "products": [
                _product(
                    1578,
                    "Columbia Anytime Outdoor Boot Cut Pants",
                    "hiking pants",
                    55.0,
                    inventory_quantity=5,
                ),
                _product(
                    1579,
                    "Columbia Anytime Outdoor Boot Cut Pants",
                    "hiking pants",
                    57.0,
                    color="grey",
                    relative_size="large",
                ),
                _product(1580, "Trail Hiking Shorts", "shorts", 25.0, inventory_quantity=1, rating=3.9),
                _product(
                    636,
                    "Steelcase Amia Ergonomic Office Chair",
                    "office chair",
                    400.0,
                    seller_id=2,
                    inventory_quantity=3,
                    color="blue",
                    relative_size="large",
                ),
                _product(
                    700,
                    "JBL Charge 4 Portable Bluetooth Speaker",
                    "bluetooth speaker",
                    100.0,
                    seller_id=2,
                    delivery_days=2,
                    rating=4.8,
                    relative_size="small",
                ),
            ],
            "reviews": [
                {
                    "review_id": 1,
                    "product_id": 636,
                    "user_id": 4,
                    "is_verified": True,
                    "rating": 2,
                    "title": "Wears out fast",
                    "text": "The seat fabric tore after six months.",
                    "created_at": "2024-06-01T10:00:00",
                },
                {
                    "review_id": 2,
                    "product_id": 636,
                    "user_id": 2,
                    "is_verified": False,
                    "rating": 5,
                    "title": "Great chair",
                    "text": "Comfortable all day.",
                    "created_at": "2024-07-01T10:00:00",
                },
            ],
            "questions": [
                {
                    "question_id": 1,
                    "product_id": 636,
                    "user_id": 2,
                    "question": "Does the seat fabric hold up?",
                    "created_at": "2024-05-01T09:00:00",
                }
            ],
            "question_answers": [
                {
                    "question_answer_id": 1,
                    "question_id": 1,
                    "user_id": 4,
                    "is_verified": True,
                    "answer": "Mine wore out within a year.",
                    "created_at": "2024-05-02T09:00:00",
                },
                {
                    "question_answer_id": 2,
                    "question_id": 1,
                    "user_id": 1,
                    "is_verified": False,
                    "answer": "Fine so far.",
                    "created_at": "2024-05-03T09:00:00",
                },
            ],
            "payment_cards": [
                _card(1, 1, "Visa Everyday", 4111222233334444, 1000.0),
                _card(2, 1, "Almost Empty", 5105105105105100, 10.0),
                _card(3, 2, "Bob's Card", 6011000990139424, 500.0),
            ],
            "addresses": [
                _address(1, 1, "Home", "12 Larch Lane"),
                _address(2, 1, "Media Studio", "7914 Carla Crossing Suite 507"),
                _address(3, 2, "Home", "1 Elm Street"),
            ],
            "cart_items": [
                {"cart_item_id": 1, "user_id": 1, "product_id": 1580, "quantity": 1, "gift_wrap_quantity": 0},
                {"cart_item_id": 2, "user_id": 2, "product_id": 700, "quantity": 2, "gift_wrap_quantity": 1},
            ],
            "orders": [
                {
                    "order_id": 1,
                    "user_id": 1,
                    "address_id": 1,
                    "payment_card_id": 1,
                    "tax": 40.0,
                    "delivery_fee": 5.0,
                    "gift_wrap_fee": 0.0,
                    "discount": 0.0,
                    "created_at": "2024-01-05T12:00:00",
                    "address_text": "12 Larch Lane\nPortland\nOR\nUSA\n97001",
                    "payment_card_digits": "4444",
                    "order_items": [
                        {
                            "product_id": 636,
                            "ordered_quantity": 1,
                            "returned_quantity": 0,
                            "gift_wrap_quantity": 0,
                            "price": 400.0,
                            "expected_delivery_at": "2024-01-08T19:00:00",
                            "delivered_at": "2024-01-08T17:00:00",
                        }
                    ],
                }
            ],
            "prime_subscriptions": [
                {
                    "prime_subscription_id": 1,
                    "user_id": 2,
                    "start_date": "2025-01-01T00:00:00",
                    "end_date": "2026-01-01T00:00:00",
                    "payment_card_digits": "9424",
                    "paid_amount": 140.0,
                }
            ],
        }
    },
}


def api(name: str) -> str:
    return f"amazon__{name}"


@pytest.fixture
def s() -> AppSession:
    return AppSession(SEED)


def laura(s: AppSession) -> str:
    return s.login("amazon", LAURA, "v[=NdO3")


def bob(s: AppSession) -> str:
    return s.login("amazon", BOB, "bob-pass")


def cart_of(s: AppSession, token: str) -> dict[int, int]:
    cart = s.ok(api("show_cart"), access_token=token)
    return {i["product_id"]: i["quantity"] for i in cart["cart_items"]}


# ---------------------------------------------------------------- accounts


def test_login_logout_and_foreign_tokens(s: AppSession) -> None:
    assert s.refused(api("login"), "unauthorized", username=LAURA, password="wrong") == "Invalid credentials"
    token = laura(s)
    assert s.ok(api("show_account"), access_token=token)["email"] == LAURA
    gmail_token = s.login("gmail", LAURA, "g-pass-1")
    message = s.refused(api("show_account"), "unauthorized", access_token=gmail_token)
    assert "not authorized to access this amazon API" in message
    assert s.ok(api("logout"), access_token=token) == {"message": "Successfully logged out."}
    s.refused(api("show_cart"), "unauthorized", access_token=token)


def test_show_account_and_profile(s: AppSession) -> None:
    account = s.ok(api("show_account"), access_token=laura(s))
    assert account == {
        "first_name": "Laura",
        "last_name": "Mccoy",
        "email": LAURA,
        "registered_at": account["registered_at"],
        "last_logged_in": "2025-05-05T09:00:00",
        "verified": True,
        "is_prime": False,
    }
    assert s.ok(api("show_account"), access_token=bob(s))["is_prime"] is True
    profile = s.ok(api("show_profile"), email=BOB)
    assert set(profile) == {"first_name", "last_name", "email", "registered_at"}
    assert profile["last_name"] == "Stone"
    assert s.refused(api("show_profile"), "failed") == "Either email or phone_number must be provided."
    assert s.refused(api("show_profile"), "failed", email="ghost@example.com") == (
        "Account for this email does not exist."
    )
    s.refused(api("show_profile"), "invalid_args", email="not-an-email")


# ---------------------------------------------------------------- catalogue


def test_show_product(s: AppSession) -> None:
    product = s.ok(api("show_product"), product_id=1578)
    assert set(product) == PRODUCT_KEYS
    assert product["variations"] == [{"product_id": 1579, "relative_size": "large", "color": "grey"}]
    chair = s.ok(api("show_product"), product_id=636)
    assert (chair["num_product_reviews"], chair["num_product_questions"]) == (2, 1)
    assert (
        s.refused(api("show_product"), "not_found", product_id=9) == "The product with id 9 does not exist."
    )


def test_search_products_ranks_filters_and_sorts(s: AppSession) -> None:
    found = s.ok(api("search_products"), query="bluetooth speaker", page_limit=20)
    ids = [p["product_id"] for p in found]
    assert ids[0] == 700
    assert set(ids) == {700, 1578, 1580, 636}  # a query ranks, never filters; variations collapse
    assert set(found[0]) == PRODUCT_KEYS
    typed = s.ok(api("search_products"), product_type="Hiking Pant", page_limit=20)
    assert [p["product_id"] for p in typed] == [1578]
    cheap = s.ok(api("search_products"), max_price=60, sort_by="-price", page_limit=20)
    assert [p["product_id"] for p in cheap] == [
        1579,
        1580,
    ]  # sorted first: the dearer variation stands for both
    by_seller = s.ok(api("search_products"), min_seller_rating=4.0, page_limit=20)
    assert {p["seller_id"] for p in by_seller} == {1}
    small = s.ok(api("search_products"), relative_size="small", color="BLACK")
    assert [p["product_id"] for p in small] == [700]
    paged = s.ok(api("search_products"), sort_by="+price", page_index=1, page_limit=2)
    assert [p["product_id"] for p in paged] == [700, 636]
    assert s.refused(api("search_products"), "failed", sort_by="price") == (
        "The sort_by parameter must start with + or -."
    )
    assert "must be one of rating, price, delivery_days" in s.refused(
        api("search_products"), "failed", sort_by="+name"
    )
    s.refused(api("search_products"), "invalid_args", relative_size="huge")
    s.refused(api("search_products"), "invalid_args", page_limit=21)


def test_sellers_types_and_feature_choices(s: AppSession) -> None:
    sellers = s.ok(api("search_sellers"), query="homegoods")
    assert sellers == [
        {"seller_id": 2, "name": "HomeGoods Company"},
        {"seller_id": 1, "name": "Acme Outdoor"},
    ]
    assert s.ok(api("show_seller"), seller_id=1) == {"seller_id": 1, "name": "Acme Outdoor", "rating": 4.2}
    s.refused(api("show_seller"), "not_found", seller_id=77)
    types = s.ok(api("search_product_types"), query="chair", page_limit=100)
    assert types[0] == "office chair"
    assert sorted(types) == ["bluetooth speaker", "hiking pants", "office chair", "shorts"]
    choices = s.ok(api("show_product_feature_choices"), product_type="hiking pants")
    assert choices == {
        "colors": ["black", "grey"],
        "relative_sizes": ["large", "medium"],
        "sellers": [{"seller_id": 1, "name": "Acme Outdoor"}],
    }
    everything = s.ok(api("show_product_feature_choices"))
    assert everything["colors"] == ["black", "blue", "grey"]
    assert [x["seller_id"] for x in everything["sellers"]] == [1, 2]


# ---------------------------------------------------------------- reviews, questions, answers


def test_show_product_reviews(s: AppSession) -> None:
    reviews = s.ok(api("show_product_reviews"), product_id=636)
    assert {r["review_id"] for r in reviews} == {1, 2}
    assert set(reviews[0]) == {
        "review_id",
        "product_id",
        "is_verified",
        "rating",
        "title",
        "text",
        "created_at",
        "user",
    }
    worn = s.ok(api("show_product_reviews"), product_id=636, query="wear out fabric")
    assert worn[0]["review_id"] == 1
    assert worn[0]["user"] == {"name": "Rita Reviewer", "email": RITA}
    low = s.ok(api("show_product_reviews"), product_id=636, max_rating=3)
    assert [r["review_id"] for r in low] == [1]
    assert [r["review_id"] for r in s.ok(api("show_product_reviews"), product_id=636, is_verified=False)] == [
        2
    ]
    assert [r["review_id"] for r in s.ok(api("show_product_reviews"), product_id=636, user_email=BOB)] == [2]
    assert [r["review_id"] for r in s.ok(api("show_product_reviews"), product_id=636, sort_by="-rating")] == [
        2,
        1,
    ]
    assert s.refused(
        api("show_product_reviews"), "not_found", product_id=636, user_email="ghost@example.com"
    ) == ("The user with email ghost@example.com does not exist.")
    s.refused(api("show_product_reviews"), "not_found", product_id=9)
    assert s.ok(api("show_product_reviews"), product_id=700) == []


def test_write_product_review(s: AppSession) -> None:
    token = laura(s)
    made = s.ok(api("write_product_review"), access_token=token, product_id=636, rating=1, title="Frayed")
    assert made == {"message": "Added a new product review.", "product_review_id": 3}
    review = state_value(s.state, "apps.amazon.reviews.3")
    assert review["is_verified"] is True  # Laura ordered the chair
    assert (review["user_id"], review["text"], review["created_at"]) == (1, "", "2025-05-05T09:00:00")
    assert s.ok(api("show_product"), product_id=636)["rating"] == round((2 + 5 + 1) / 3, 1)
    assert state_value(s.state, "apps.amazon.sellers.2.rating") == round((2.7 + 4.8) / 2, 1)
    again = s.refused(api("write_product_review"), "failed", access_token=token, product_id=636, rating=4)
    assert again == "ProductReview with this product_id and user_id already exists."
    unverified = s.ok(api("write_product_review"), access_token=token, product_id=700, rating=5)
    assert state_value(s.state, f"apps.amazon.reviews.{unverified['product_review_id']}.is_verified") is False
    assert "non-existent object via product_id=9" in s.refused(
        api("write_product_review"), "failed", access_token=token, product_id=9, rating=3
    )
    s.refused(api("write_product_review"), "invalid_args", access_token=token, product_id=636, rating=6)


def test_questions_and_answers(s: AppSession) -> None:
    questions = s.ok(api("show_product_questions"), product_id=636)
    assert questions == [
        {
            "product_id": 636,
            "question_id": 1,
            "question": "Does the seat fabric hold up?",
            "created_at": "2024-05-01T09:00:00",
            "user": {"name": "Bob Stone", "email": BOB},
        }
    ]
    token = laura(s)
    asked = s.ok(
        api("write_product_question"), access_token=token, product_id=700, question="Is it waterproof?"
    )
    assert asked == {"message": "Posted a new product question.", "question_id": 2}
    same = s.refused(
        api("write_product_question"),
        "failed",
        access_token=token,
        product_id=700,
        question="Is it waterproof?",
    )
    assert same == "ProductQuestion with this product_id, user_id and question already exists."
    mine = s.ok(api("show_product_questions"), product_id=700, user_email=LAURA)
    assert [q["question"] for q in mine] == ["Is it waterproof?"]
    s.refused(api("write_product_question"), "not_found", access_token=token, product_id=9, question="?")
    s.refused(api("write_product_question"), "invalid_args", access_token=token, product_id=700, question="")
    answers = s.ok(api("show_product_question_answers"), question_id=1)
    assert {a["question_answer_id"] for a in answers} == {1, 2}
    assert set(answers[0]) == {
        "question_answer_id",
        "question_id",
        "is_verified",
        "answer",
        "created_at",
        "user",
    }
    verified = s.ok(api("show_product_question_answers"), question_id=1, is_verified=True)
    assert [a["answer"] for a in verified] == ["Mine wore out within a year."]
    newest = s.ok(api("show_product_question_answers"), question_id=1, sort_by="-created_at")
    assert [a["question_answer_id"] for a in newest] == [2, 1]
    assert s.refused(api("show_product_question_answers"), "not_found", question_id=5) == (
        "The question with id 5 does not exist."
    )


# ---------------------------------------------------------------- cart and wish list


def test_cart_adds_to_quantities_and_checks_inventory(s: AppSession) -> None:
    token = laura(s)
    assert s.ok(api("add_product_to_cart"), access_token=token, product_id=700) == {
        "message": "Product/s added to the cart."
    }
    s.ok(api("add_product_to_cart"), access_token=token, product_id=700, quantity=2)
    assert cart_of(s, token) == {1580: 1, 700: 3}
    assert s.refused(
        api("add_product_to_cart"), "failed", access_token=token, product_id=1578, quantity=6
    ) == ("The inventory doesn't have 6 item/s available at this time.")
    s.refused(api("add_product_to_cart"), "not_found", access_token=token, product_id=9)
    s.refused(api("add_product_to_cart"), "invalid_args", access_token=token, product_id=700, quantity=0)
    s.ok(api("add_product_to_cart"), access_token=token, product_id=1578, clear_cart_first=True)
    assert cart_of(s, token) == {1578: 1}
    assert cart_of(s, bob(s)) == {700: 2}  # another user's cart is untouched


def test_show_cart_costs(s: AppSession) -> None:
    token = laura(s)
    s.ok(api("add_product_to_cart"), access_token=token, product_id=700)
    cart = s.ok(api("show_cart"), access_token=token)
    assert cart == {
        "delivery_fee": 5.0,
        "base_cost": 125.0,
        "tax": 12.5,
        "gift_wrap_fee": 0.0,
        "discount": 0.0,
        "total_cost": 142.5,
        "promo_code": None,
        "promo_valid": False,
        "cart_items": [
            {
                "product_id": 1580,
                "product_name": "Trail Hiking Shorts",
                "delivery_days": 3,
                "quantity": 1,
                "price": 25.0,
                "gift_wrap_quantity": 0,
            },
            {
                "product_id": 700,
                "product_name": "JBL Charge 4 Portable Bluetooth Speaker",
                "delivery_days": 2,
                "quantity": 1,
                "price": 100.0,
                "gift_wrap_quantity": 0,
            },
        ],
    }
    prime = s.ok(api("show_cart"), access_token=bob(s))  # prime: no delivery fee; one unit gift wrapped
    assert (prime["delivery_fee"], prime["gift_wrap_fee"], prime["total_cost"]) == (0.0, 5.0, 225.0)


def test_update_delete_and_clear_cart(s: AppSession) -> None:
    token = laura(s)
    s.ok(api("add_product_to_cart"), access_token=token, product_id=700)
    assert s.ok(api("update_product_quantity_in_cart"), access_token=token, product_id=700, quantity=4) == {
        "message": "Updated the quantity of the product in the cart."
    }
    assert cart_of(s, token)[700] == 4
    s.refused(
        api("update_product_quantity_in_cart"), "failed", access_token=token, product_id=700, quantity=11
    )
    assert s.refused(
        api("update_product_quantity_in_cart"), "failed", access_token=token, product_id=1578, quantity=1
    ) == ("The product is not present in the cart.")
    s.ok(api("update_product_quantity_in_cart"), access_token=token, product_id=700, quantity=0)
    assert cart_of(s, token) == {1580: 1}
    assert s.ok(api("delete_product_from_cart"), access_token=token, product_id=1580) == {
        "message": "Deleted the product from your cart."
    }
    assert s.refused(api("delete_product_from_cart"), "failed", access_token=token, product_id=1580) == (
        "The product is not present in the cart."
    )
    s.ok(api("add_product_to_cart"), access_token=token, product_id=636)
    assert s.ok(api("clear_cart"), access_token=token) == {"message": "Cleared the items from your cart."}
    assert cart_of(s, token) == {}
    assert state_value(s.state, "apps.amazon.cart_items.2.quantity") == 2  # Bob's entry stays


def test_wish_list_and_moves(s: AppSession) -> None:
    token = laura(s)
    assert s.ok(api("add_product_to_wish_list"), access_token=token, product_id=636, quantity=2) == {
        "message": "Product/s added to the wish list."
    }
    s.ok(api("add_product_to_wish_list"), access_token=token, product_id=700)
    wish = s.ok(api("show_wish_list"), access_token=token)
    assert wish == [
        {
            "product_id": 636,
            "product_name": "Steelcase Amia Ergonomic Office Chair",
            "quantity": 2,
            "price": 400.0,
        },
        {
            "product_id": 700,
            "product_name": "JBL Charge 4 Portable Bluetooth Speaker",
            "quantity": 1,
            "price": 100.0,
        },
    ]
    s.refused(api("add_product_to_wish_list"), "failed", access_token=token, product_id=636, quantity=4)
    s.ok(api("add_product_to_wish_list"), access_token=token, product_id=1578, clear_wish_list_first=True)
    assert [w["product_id"] for w in s.ok(api("show_wish_list"), access_token=token)] == [1578]

    moved = s.ok(api("move_product_from_wish_list_to_cart"), access_token=token, product_id=1578)
    assert moved == {"message": "1 product/s moved from the wish list to the cart."}
    assert s.ok(api("show_wish_list"), access_token=token) == []
    assert cart_of(s, token) == {1580: 1, 1578: 1}
    assert s.refused(
        api("move_product_from_wish_list_to_cart"), "failed", access_token=token, product_id=1578
    ) == ("The product is not available in the wish list.")
    s.ok(api("add_product_to_cart"), access_token=token, product_id=1578, quantity=2)
    back = s.ok(api("move_product_from_cart_to_wish_list"), access_token=token, product_id=1578, quantity=2)
    assert back == {"message": "2 product/s moved from the cart to the wish list."}
    assert cart_of(s, token)[1578] == 1
    assert s.ok(api("show_wish_list"), access_token=token)[0]["quantity"] == 2
    too_many = s.refused(
        api("move_product_from_cart_to_wish_list"), "failed", access_token=token, product_id=1578, quantity=5
    )
    assert too_many == "The cart only has 1 of this product, so can't move 5 to wish list."
    s.refused(api("move_product_from_cart_to_wish_list"), "failed", access_token=token, product_id=636)


# ---------------------------------------------------------------- cards and addresses


def test_payment_cards_hide_the_balance(s: AppSession) -> None:
    token = laura(s)
    cards = s.ok(api("show_payment_cards"), access_token=token)
    assert [c["payment_card_id"] for c in cards] == [1, 2]
    assert all(set(c) == CARD_KEYS for c in cards)
    card = s.ok(api("show_payment_card"), access_token=token, payment_card_id=1)
    assert card["card_number"] == 4111222233334444 and "balance" not in card
    assert s.refused(api("show_payment_card"), "failed", access_token=token, payment_card_id=3) == (
        "The given payment card does not belong to you, so you cannot access it."
    )
    assert s.refused(api("show_payment_card"), "not_found", access_token=token, payment_card_id=99) == (
        "The payment card with id 99 does not exist."
    )


def test_addresses(s: AppSession) -> None:
    token = laura(s)
    shown = s.ok(api("show_addresses"), access_token=token)
    assert [a["address_id"] for a in shown] == [1, 2]
    assert set(shown[0]) == {"address_id", "name", "street_address", "city", "state", "country", "zip_code"}
    fields = {"street_address": "5 Oak Road", "city": "Salem", "state": "OR", "country": "USA"}
    added = s.ok(api("add_address"), access_token=token, name="Work", zip_code=97301, **fields)
    assert added == {"message": "Added address to your account.", "address_id": 4}
    assert state_value(s.state, "apps.amazon.addresses.4.user_id") == 1
    assert [a["name"] for a in s.ok(api("show_addresses"), access_token=token)] == [
        "Home",
        "Media Studio",
        "Work",
    ]
    assert s.refused(
        api("add_address"), "failed", access_token=token, name="Work", zip_code=97301, **fields
    ) == ("Address with this user_id and name already exists.")
    s.refused(api("add_address"), "invalid_args", access_token=token, name="Cabin", zip_code=123, **fields)
    s.refused(api("add_address"), "invalid_args", access_token=token, name="", zip_code=97301, **fields)


# ---------------------------------------------------------------- orders


def _mentions(value: Any, text: str) -> bool:
    return text in json.dumps(value)


def test_place_order_charges_ships_and_mails(s: AppSession) -> None:
    token = laura(s)
    s.ok(api("add_product_to_cart"), access_token=token, product_id=700)
    before = s.state
    placed = s.ok(api("place_order"), access_token=token, payment_card_id=1, address_id=2)
    assert placed == {
        "message": "Successfully placed the order. Debitted total amount of 142.5 from your card.",
        "order_id": 2,
    }
    assert state_value(s.state, "apps.amazon.payment_cards.1.balance") == 857.5
    assert state_value(s.state, "apps.amazon.products.700.inventory_quantity") == 9
    assert state_value(s.state, "apps.amazon.products.1580.inventory_quantity") == 0
    assert cart_of(s, token) == {}
    paths = {c.path for c in state_diff(before, s.state)}
    assert {"apps.amazon.orders.2", "apps.amazon.payment_cards.1", "apps.amazon.cart_items.1"} <= paths

    order = s.ok(api("show_order"), access_token=token, order_id=2)
    assert set(order) == ORDER_KEYS
    assert set(order["order_items"][0]) == ORDER_ITEM_KEYS
    assert [(i["product_id"], i["ordered_quantity"]) for i in order["order_items"]] == [(1580, 1), (700, 1)]
    assert order["order_items"][1]["expected_delivery_at"] == "2025-05-07T19:00:00"
    assert order["paid_amount"] == 142.5
    assert (order["tax"], order["delivery_fee"], order["payment_card_digits"]) == (12.5, 5.0, "4444")
    assert order["address_text"] == "7914 Carla Crossing Suite 507\nPortland\nOR\nUSA\n97001"
    assert order["name"] == "1 short, 1 bluetooth speaker"
    assert order["created_at"] == "2025-05-05T09:00:00"

    gmail = s.state.apps["gmail"]
    mails = [r for rows in gmail.values() if isinstance(rows, list) for r in rows]
    confirmations = [r for r in mails if _mentions(r, "Amazon Order Confirmation")]
    assert confirmations and any(_mentions(r, LAURA) for r in confirmations)


def test_place_order_refusals(s: AppSession) -> None:
    token = laura(s)
    assert s.refused(
        api("place_order"), "not_found", access_token=token, payment_card_id=99, address_id=1
    ) == ("The payment card with id 99 does not exist.")
    assert s.refused(api("place_order"), "failed", access_token=token, payment_card_id=3, address_id=1) == (
        "The given payment card does not belong to you, so you cannot access it."
    )
    assert s.refused(api("place_order"), "failed", access_token=token, payment_card_id=1, address_id=3) == (
        "The given address does not belong to you, so you cannot access it."
    )
    s.refused(api("place_order"), "not_found", access_token=token, payment_card_id=1, address_id=42)
    before = s.state
    assert s.refused(api("place_order"), "failed", access_token=token, payment_card_id=2, address_id=1) == (
        "Your payment card doesn't have enough balance to place the order."
    )
    assert s.state is before
    # AppWorld checks only the added quantity against the inventory; the order checks the total
    s.ok(api("add_product_to_cart"), access_token=token, product_id=1580)
    short = s.refused(api("place_order"), "failed", access_token=token, payment_card_id=1, address_id=1)
    assert short.startswith("Product Trail Hiking Shorts only has 1 quantity in the inventory.")
    s.ok(api("clear_cart"), access_token=token)
    assert s.refused(api("place_order"), "failed", access_token=token, payment_card_id=1, address_id=1) == (
        "The cart is empty, so can't place the order."
    )


def test_prime_order_without_gmail_account_still_stands(s: AppSession) -> None:
    token = bob(s)
    placed = s.ok(api("place_order"), access_token=token, payment_card_id=3, address_id=3)
    assert (
        placed["message"] == "Successfully placed the order. Debitted total amount of 225.0 from your card."
    )
    assert state_value(s.state, "apps.amazon.payment_cards.3.balance") == 275.0
    order = s.ok(api("show_order"), access_token=token, order_id=placed["order_id"])
    assert (order["delivery_fee"], order["gift_wrap_fee"], order["order_items"][0]["gift_wrap_quantity"]) == (
        0.0,
        5.0,
        1,
    )
    assert not _mentions(s.state.apps.get("gmail", {}), BOB)  # Bob has no gmail account: no mail


def test_show_orders_and_order_ownership(s: AppSession) -> None:
    token = laura(s)
    s.ok(api("add_product_to_cart"), access_token=token, product_id=700)
    s.ok(api("place_order"), access_token=token, payment_card_id=1, address_id=1)
    orders = s.ok(api("show_orders"), access_token=token)
    assert [o["order_id"] for o in orders] == [2, 1]  # newest first
    assert all(set(o) == ORDER_KEYS for o in orders)
    assert orders[1]["paid_amount"] == 445.0 and orders[1]["name"] == "1 office chair"
    chair = s.ok(api("show_orders"), access_token=token, query="office chair")
    assert chair[0]["order_id"] == 1
    oldest = s.ok(api("show_orders"), access_token=token, sort_by="+created_at", page_limit=1)
    assert [o["order_id"] for o in oldest] == [1]
    s.refused(api("show_orders"), "failed", access_token=token, sort_by="+name")
    assert s.ok(api("show_orders"), access_token=bob(s)) == []
    assert s.refused(api("show_order"), "failed", access_token=bob(s), order_id=1) == (
        "The given order does not belong to you, so you cannot access it."
    )
    assert s.refused(api("show_order"), "not_found", access_token=token, order_id=77) == (
        "The order with id 77 does not exist."
    )
