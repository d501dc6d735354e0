"""The ``amazon`` app on AppWorld's tool surface: a catalogue of products from sellers, reviews
and questions about them, and per user a cart, a wish list, payment cards, addresses and orders.

Records (``apps["amazon"]``; per-user records carry the owner's ``user_id``):

- ``users``: the seed's people with an amazon account (see ``seed``); a reviewer or answerer who
  is nobody's persona may be added here as well.
- ``sellers``: ``{seller_id, name, rating}``.
- ``products``: ``{product_id, seller_id, product_type, name, description, price, delivery_days,
  inventory_quantity, weight, length, width, height, color, relative_size, rating}``
  (``relative_size``: extra-small|small|medium|large|extra-large or null; products sharing a
  name are each other's ``variations``; ``inventory_quantity`` 0 when absent). A new review
  sets the product's ``rating`` to the mean of its reviews and the seller's to the mean of its
  rated products, as AppWorld does.
- ``reviews``: ``{review_id, product_id, user_id, is_verified, rating, title, text, created_at}``
  (one per user and product).
- ``questions``: ``{question_id, product_id, user_id, question, created_at}``.
- ``question_answers``: ``{question_answer_id, question_id, user_id, is_verified, answer,
  created_at}``.
- ``cart_items``: ``{cart_item_id, user_id, product_id, quantity, gift_wrap_quantity}``.
- ``wish_list_items``: ``{wish_list_item_id, user_id, product_id, quantity}``.
- ``payment_cards``: ``{payment_card_id, user_id, card_name, owner_name, card_number,
  expiry_year, expiry_month, cvv_number, balance}`` (``balance``: what the card can still pay,
  0 when absent; no API shows it, ``place_order`` debits it).
- ``addresses``: ``{address_id, user_id, name, street_address, city, state, country, zip_code}``.
- ``orders``: ``{order_id, user_id, address_id, payment_card_id, tax, delivery_fee,
  gift_wrap_fee, discount, created_at, address_text, payment_card_digits, order_items:
  [{product_id, ordered_quantity, returned_quantity, gift_wrap_quantity, price,
  expected_delivery_at, delivered_at}]}`` (``name`` and ``paid_amount`` are computed when shown).
- ``prime_subscriptions``: ``{prime_subscription_id, user_id, start_date, end_date,
  payment_card_digits, paid_amount}``: a user is prime while one has ``end_date`` after now.

Tools (``mcp_appworld_amazon__<api>``, AppWorld's parameters and response keys): ``login``,
``logout``, ``show_account``, ``show_profile``; catalogue (no token): ``search_products``,
``show_product``, ``search_sellers``, ``show_seller``, ``search_product_types``,
``show_product_feature_choices``, ``show_product_reviews``, ``show_product_questions``,
``show_product_question_answers``; with a token: ``write_product_review``,
``write_product_question``, ``show_cart``, ``add_product_to_cart``,
``update_product_quantity_in_cart``, ``delete_product_from_cart``, ``clear_cart``,
``show_wish_list``, ``add_product_to_wish_list``, ``move_product_from_cart_to_wish_list``,
``move_product_from_wish_list_to_cart``, ``show_payment_cards``, ``show_payment_card``,
``show_addresses``, ``add_address``, ``place_order``, ``show_orders``, ``show_order``.

``place_order`` orders the whole cart: total = items + gift wrap ($5 a wrapped unit) + 10% tax
of the items + $5 delivery (none for prime users) - discount (always 0: promo codes are not
modelled). It debits the card, lowers the inventory, empties the cart and mails "Amazon Order
Confirmation" from notifications@amazon.com to the user's gmail account (``gmail.deliver_email``).
Without a gmail account for the user (or for the sender) no mail is sent and the order stands and
is answered as placed; AppWorld answers 422 in that case, after it has already charged the card
and saved the order.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    MAX_INT,
    TIME_FORMAT,
    AppApis,
    AppArgs,
    AuthArgs,
    AuthPageArgs,
    EmailAddress,
    PageArgs,
    Row,
    ToolContext,
    ToolFailed,
    check_sort,
    id_field,
    in_range,
    login_tool,
    logout_tool,
    money,
    page,
    page_index_field,
    page_limit_field,
    pick,
    rank,
    ranked,
    retrieve,
    search_text,
    show_account_tool,
    show_profile_tool,
    singular,
    sort_rows,
)

APP = "amazon"
apis = AppApis(APP)
NOTIFIER = "notifications@amazon.com"
DELIVERY_FEE = 5.0
GIFT_WRAP_FEE = 5.0
TAX_PERCENT = 10

Size = Literal["extra-small", "small", "medium", "large", "extra-large"]


# ---------------------------------------------------------------- helpers


def _plural(phrase: str) -> str:
    if phrase.endswith(("ss", "x", "ch", "sh", "z")):
        return phrase + "es"
    if phrase.endswith("s"):
        return phrase
    if phrase.endswith("y") and len(phrase) > 1 and phrase[-2] not in "aeiou":
        return phrase[:-1] + "ies"
    return phrase + "s"


def _is_prime(ctx: ToolContext, user: Row) -> bool:
    """Whether a prime subscription of the user ends after now."""
    now = ctx.timestamp()
    return any(str(s.get("end_date", "")) > now for s in ctx.mine(APP, "prime_subscriptions", user))


def _user_id(ctx: ToolContext, email: str | None) -> int | None:
    """The user id of ``email`` (AppWorld's 409 list message when nobody has it), None for None."""
    return None if email is None else int(ctx.user_by_email(APP, email)["user_id"])


# ---------------------------------------------------------------- catalogue


_PRODUCT_FIELDS = (
    "product_id",
    "seller_id",
    "product_type",
    "name",
    "description",
    "price",
    "delivery_days",
    "inventory_quantity",
    "weight",
    "length",
    "width",
    "height",
    "color",
    "relative_size",
)


def _product_view(ctx: ToolContext, product: dict[str, Any]) -> JsonObject:
    pid = product["product_id"]
    others = [
        p
        for p in ctx.rows(APP, "products")
        if p.get("name") == product.get("name") and p["product_id"] != pid
    ]
    view: JsonObject = {f: product.get(f) for f in _PRODUCT_FIELDS}
    view["rating"] = product.get("rating", 0.0)
    view["num_product_reviews"] = sum(1 for r in ctx.rows(APP, "reviews") if r.get("product_id") == pid)
    view["num_product_questions"] = sum(1 for q in ctx.rows(APP, "questions") if q.get("product_id") == pid)
    view["variations"] = [
        {"product_id": p["product_id"], "relative_size": p.get("relative_size"), "color": p.get("color")}
        for p in others
    ]
    return view


class ProductArgs(AppArgs):
    product_id: int = id_field("The product's id.")


apis.add(
    login_tool(APP, description="Log in to your amazon account; gives an access token."),
    logout_tool(APP),
    show_account_tool(
        APP,
        "Your own account details, private ones included.",
        lambda ctx, user: {"is_prime": _is_prime(ctx, user)},
    ),
    show_profile_tool(APP, "A user's public profile, by email."),
)


@apis.api("One product's details, by id.")
def show_product(ctx: ToolContext, args: ProductArgs) -> JsonObject:
    return _product_view(ctx, ctx.find(APP, "products", args.product_id, "product"))


class SearchProductsArgs(PageArgs):
    query: str = Field(
        default="", description="Words to look for in products' names, types and descriptions."
    )
    product_type: str | None = Field(default=None, description="Only products of this type.")
    color: str | None = Field(default=None, description="Only products of this color.")
    relative_size: Size | None = Field(default=None, description="Only products of this relative size.")
    min_price: float = Field(default=0.0, ge=0, allow_inf_nan=False, description="Lowest price.")
    max_price: float = Field(default=float(MAX_INT), ge=0, allow_inf_nan=False, description="Highest price.")
    min_product_rating: float = Field(default=0.0, ge=0, le=5, description="Lowest product rating.")
    max_product_rating: float = Field(default=5.0, ge=0, le=5, description="Highest product rating.")
    min_seller_rating: float = Field(default=0.0, ge=0, le=5, description="Lowest seller rating.")
    max_seller_rating: float = Field(default=5.0, ge=0, le=5, description="Highest seller rating.")
    seller_id: int | None = Field(default=None, description="Only products of this seller.")
    sort_by: str | None = Field(
        default=None,
        description="+field or -field, field one of rating, price, delivery_days. With a query, the "
        "ranked page is sorted.",
    )


@apis.api("Search the catalogue; optional filters by type, color, size, price, ratings and seller.")
def search_products(ctx: ToolContext, args: SearchProductsArgs) -> list[JsonObject]:
    check_sort(args.sort_by, ("rating", "price", "delivery_days"))
    kind = None if args.product_type is None else singular(args.product_type.lower())
    rows = []
    for p in ctx.rows(APP, "products"):
        if kind is not None and singular(str(p.get("product_type", "")).lower()) != kind:
            continue
        if args.seller_id is not None and p.get("seller_id") != args.seller_id:
            continue
        if args.color is not None and str(p.get("color") or "").lower() != args.color.lower():
            continue
        if args.relative_size is not None and p.get("relative_size") != args.relative_size:
            continue
        if not in_range(p.get("price"), args.min_price, args.max_price, 0, MAX_INT):
            continue
        if not in_range(p.get("rating"), args.min_product_rating, args.max_product_rating, 0, 5):
            continue
        seller_rating = (ctx.get(APP, "sellers", p.get("seller_id")) or {}).get("rating")
        if not in_range(seller_rating, args.min_seller_rating, args.max_seller_rating, 0, 5):
            continue
        rows.append(p)
    rows = sort_rows(rows, args.sort_by or None)
    seen: set[Any] = set()
    unique = []
    for p in rows:  # one product per name: the variations are listed under it
        if p.get("name") not in seen:
            seen.add(p.get("name"))
            unique.append(p)

    def text(p: Row) -> str:
        seller = ctx.get(APP, "sellers", p.get("seller_id")) or {}
        fields = (p.get("name"), p.get("product_type"), p.get("description"), seller.get("name"))
        return search_text(*(f for f in fields if f))

    found = page(rank(unique, args.query, text), args.page_index, args.page_limit)
    return [_product_view(ctx, p) for p in found]


class SearchArgs(PageArgs):
    query: str = Field(default="", description="Words to look for.")


@apis.api("Search sellers by name.")
def search_sellers(ctx: ToolContext, args: SearchArgs) -> list[JsonObject]:
    sellers = ctx.rows(APP, "sellers")
    found = page(ranked(sellers, args.query, "name"), args.page_index, args.page_limit)
    return [{"seller_id": s["seller_id"], "name": s.get("name")} for s in found]


class SellerArgs(AppArgs):
    seller_id: int = id_field("The seller's id.")


@apis.api("One seller's details, by id.")
def show_seller(ctx: ToolContext, args: SellerArgs) -> JsonObject:
    seller = ctx.find(APP, "sellers", args.seller_id, "seller")
    return {"seller_id": seller["seller_id"], "name": seller.get("name"), "rating": seller.get("rating", 0.0)}


class ProductTypesArgs(AppArgs):
    query: str = Field(default="", description="Words to look for in the product types.")
    page_index: int = page_index_field()
    page_limit: int = page_limit_field(MAX_INT, "The maximum number of results (large values list all).")


@apis.api("Search the product types in the catalogue.")
def search_product_types(ctx: ToolContext, args: ProductTypesArgs) -> list[str]:
    types: list[str] = []
    for p in ctx.rows(APP, "products"):
        kind = p.get("product_type")
        if isinstance(kind, str) and kind not in types:
            types.append(kind)
    rows = [{"product_type": t} for t in types]
    found = page(ranked(rows, args.query, "product_type"), args.page_index, args.page_limit)
    return [str(r["product_type"]) for r in found]


class FeatureChoicesArgs(AppArgs):
    product_type: str | None = Field(default=None, description="The product type; every product when absent.")


@apis.api("The colors, relative sizes and sellers found among products of a type (or all products).")
def show_product_feature_choices(ctx: ToolContext, args: FeatureChoicesArgs) -> JsonObject:
    products = ctx.rows(APP, "products")
    if args.product_type is not None:
        wanted = singular(args.product_type.lower())
        products = [p for p in products if singular(str(p.get("product_type", "")).lower()) == wanted]
    colors = sorted({str(p["color"]) for p in products if p.get("color")})
    sizes = sorted({str(p["relative_size"]) for p in products if p.get("relative_size")})
    seller_ids = {p.get("seller_id") for p in products}
    sellers = [
        {"seller_id": s["seller_id"], "name": s.get("name")}
        for s in sorted(ctx.rows(APP, "sellers"), key=lambda s: s["seller_id"])
        if s["seller_id"] in seller_ids
    ]
    return {"colors": colors, "relative_sizes": sizes, "sellers": sellers}


# ---------------------------------------------------------------- reviews, questions, answers


def _bought(ctx: ToolContext, user: dict[str, Any], product_id: int) -> bool:
    return any(
        item.get("product_id") == product_id
        for order in ctx.mine(APP, "orders", user)
        for item in order.get("order_items", [])
    )


def _posts(
    ctx: ToolContext,
    collection: str,
    about: tuple[str, int],
    author_email: str | None,
    is_verified: bool | None = None,
) -> list[dict[str, Any]]:
    """The reviews, questions or answers of ``collection`` about one record (``about``: the field
    that names it and its id), by one author when ``author_email`` is given (AppWorld's 409 when
    nobody has it), and by verified buyers (or the others) when ``is_verified`` is given."""
    field_name, record_id = about
    user_id = _user_id(ctx, author_email)
    return [
        p
        for p in ctx.rows(APP, collection)
        if p.get(field_name) == record_id
        and (user_id is None or p.get("user_id") == user_id)
        and (is_verified is None or bool(p.get("is_verified")) == is_verified)
    ]


class ReviewsArgs(PageArgs):
    product_id: int = id_field("The product whose reviews to show.")
    query: str = Field(default="", description="Words to look for in the reviews' titles and texts.")
    user_email: EmailAddress | None = Field(default=None, description="Only this reviewer's reviews.")
    min_rating: int = Field(default=1, ge=1, le=5, description="Lowest rating.")
    max_rating: int = Field(default=5, ge=1, le=5, description="Highest rating.")
    is_verified: bool | None = Field(default=None, description="Only reviews by (or not by) verified buyers.")
    sort_by: str | None = Field(
        default=None, description="+field or -field, field one of rating, created_at."
    )


@apis.api("List a product's reviews, with filters.")
def show_product_reviews(ctx: ToolContext, args: ReviewsArgs) -> list[JsonObject]:
    ctx.find(APP, "products", args.product_id, "product")
    rows = [
        r
        for r in _posts(ctx, "reviews", ("product_id", args.product_id), args.user_email, args.is_verified)
        if in_range(r.get("rating"), args.min_rating, args.max_rating, 1, 5)
    ]
    found = retrieve(
        ((f"{r.get('title', '')} {r.get('text', '')}", r) for r in rows), args, ("rating", "created_at")
    )
    return [
        {
            "review_id": r["review_id"],
            "product_id": r["product_id"],
            "is_verified": bool(r.get("is_verified", False)),
            "rating": r.get("rating"),
            "title": r.get("title", ""),
            "text": r.get("text", ""),
            "created_at": r.get("created_at"),
            "user": ctx.person_of(APP, r.get("user_id")),
        }
        for r in found
    ]


class WriteReviewArgs(AuthArgs):
    product_id: int = id_field("The product to review.")
    rating: int = Field(ge=1, le=5, description="Your rating of the product, 1 to 5.")
    title: str = Field(default="", description="The review's title.")
    text: str = Field(default="", description="The review's text.")


def _mean(values: Iterable[Any]) -> float:
    numbers = [float(v) for v in values if v is not None and float(v) > 0]
    return round(sum(numbers) / len(numbers), 1) if numbers else 0.0


def _rerate(ctx: ToolContext, product: dict[str, Any]) -> None:
    """The product's rating from its reviews, the seller's from its rated products."""
    product["rating"] = _mean(
        r.get("rating") for r in ctx.rows(APP, "reviews") if r.get("product_id") == product["product_id"]
    )
    seller = ctx.get(APP, "sellers", product.get("seller_id"))
    if seller is not None:
        seller["rating"] = _mean(
            p.get("rating") for p in ctx.rows(APP, "products") if p.get("seller_id") == seller["seller_id"]
        )


@apis.api("Review a product (once per product).")
def write_product_review(ctx: ToolContext, args: WriteReviewArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    product = ctx.linked(APP, "products", args.product_id, "ProductReview", "product_id")
    review = ctx.insert(
        APP,
        "reviews",
        {
            "product_id": args.product_id,
            "user_id": user["user_id"],
            "is_verified": _bought(ctx, user, args.product_id),
            "rating": args.rating,
            "title": args.title,
            "text": args.text,
            "created_at": ctx.timestamp(),
        },
        unique=("ProductReview", ("product_id", "user_id")),
    )
    _rerate(ctx, product)
    return {"message": "Added a new product review.", "product_review_id": review["review_id"]}


class QuestionsArgs(PageArgs):
    product_id: int = id_field("The product whose questions to show.")
    query: str = Field(default="", description="Words to look for in the questions.")
    user_email: EmailAddress | None = Field(default=None, description="Only this asker's questions.")
    sort_by: str | None = Field(default=None, description="+created_at or -created_at.")


@apis.api("List questions asked about a product.")
def show_product_questions(ctx: ToolContext, args: QuestionsArgs) -> list[JsonObject]:
    ctx.find(APP, "products", args.product_id, "product")
    rows = _posts(ctx, "questions", ("product_id", args.product_id), args.user_email)
    found = retrieve(((str(q.get("question", "")), q) for q in rows), args, ("created_at",))
    return [
        {
            "product_id": q["product_id"],
            "question_id": q["question_id"],
            "question": q.get("question"),
            "created_at": q.get("created_at"),
            "user": ctx.person_of(APP, q.get("user_id")),
        }
        for q in found
    ]


class WriteQuestionArgs(AuthArgs):
    product_id: int = id_field("The product to ask about.")
    question: str = Field(min_length=1, description="Your question.")


@apis.api("Ask a question about a product.")
def write_product_question(ctx: ToolContext, args: WriteQuestionArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    ctx.find(APP, "products", args.product_id, "product")
    mine = {"product_id": args.product_id, "user_id": user["user_id"], "question": args.question}
    question = ctx.insert(
        APP, "questions", mine | {"created_at": ctx.timestamp()}, unique=("ProductQuestion", tuple(mine))
    )
    return {"message": "Posted a new product question.", "question_id": question["question_id"]}


class AnswersArgs(PageArgs):
    question_id: int = id_field("The question whose answers to show.")
    query: str = Field(default="", description="Words to look for in the answers.")
    user_email: EmailAddress | None = Field(default=None, description="Only this answerer's answers.")
    is_verified: bool | None = Field(default=None, description="Only answers by (or not by) verified buyers.")
    sort_by: str | None = Field(default=None, description="+created_at or -created_at.")


@apis.api("List the answers to a product question.")
def show_product_question_answers(ctx: ToolContext, args: AnswersArgs) -> list[JsonObject]:
    question = ctx.find(APP, "questions", args.question_id, "question")
    ctx.find(APP, "products", question.get("product_id"), "product")
    rows = _posts(
        ctx, "question_answers", ("question_id", args.question_id), args.user_email, args.is_verified
    )
    found = retrieve(((str(a.get("answer", "")), a) for a in rows), args, ("created_at",))
    return [
        {
            "question_answer_id": a["question_answer_id"],
            "question_id": a["question_id"],
            "is_verified": bool(a.get("is_verified", False)),
            "answer": a.get("answer"),
            "created_at": a.get("created_at"),
            "user": ctx.person_of(APP, a.get("user_id")),
        }
        for a in found
    ]


# ---------------------------------------------------------------- cart and wish list


def _add_entry(
    ctx: ToolContext, collection: str, user: dict[str, Any], product_id: int, quantity: int
) -> None:
    """Add ``quantity`` to the user's entry of ``product_id`` (a new entry when there is none)."""
    entry = ctx.my(APP, collection, user, product_id=product_id)
    if entry is not None:
        entry["quantity"] = int(entry.get("quantity", 0)) + quantity
        return
    wrap = {"gift_wrap_quantity": 0} if collection == "cart_items" else {}
    ctx.insert(
        APP, collection, {"user_id": user["user_id"], "product_id": product_id, "quantity": quantity} | wrap
    )


def _clear(ctx: ToolContext, collection: str, user: dict[str, Any]) -> None:
    rows = ctx.rows(APP, collection)
    rows[:] = [r for r in rows if r.get("user_id") != user["user_id"]]


def _inventory(product: dict[str, Any]) -> int:
    return int(product.get("inventory_quantity", 0) or 0)


def _check_inventory(product: dict[str, Any], quantity: int) -> None:
    if quantity > _inventory(product):
        raise ToolFailed(f"The inventory doesn't have {quantity} item/s available at this time.")


@apis.api("Your cart: its items and the costs of ordering it.")
def show_cart(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    items = []
    base_cost = 0.0
    gift_wrap = 0.0
    for entry in ctx.mine(APP, "cart_items", user):
        product = ctx.find(APP, "products", entry["product_id"], "product")
        price = float(product.get("price", 0.0))
        items.append(
            {
                "product_id": product["product_id"],
                "product_name": product.get("name"),
                "delivery_days": product.get("delivery_days"),
                "quantity": entry["quantity"],
                "price": price,
                "gift_wrap_quantity": int(entry.get("gift_wrap_quantity", 0)),
            }
        )
        base_cost += entry["quantity"] * price
        gift_wrap += int(entry.get("gift_wrap_quantity", 0)) * GIFT_WRAP_FEE
    base_cost, gift_wrap = money(base_cost), money(gift_wrap)
    delivery = 0.0 if _is_prime(ctx, user) else DELIVERY_FEE
    tax = money(base_cost * TAX_PERCENT / 100)
    return {
        "delivery_fee": delivery,
        "base_cost": base_cost,
        "tax": tax,
        "gift_wrap_fee": gift_wrap,
        "discount": 0.0,
        "total_cost": max(money(base_cost + gift_wrap + delivery + tax), 0.0),
        "promo_code": None,
        "promo_valid": False,
        "cart_items": items,
    }


class AddToCartArgs(AuthArgs):
    product_id: int = id_field("The product to add.")
    quantity: int = Field(default=1, ge=1, description="How many to add to what the cart already holds.")
    clear_cart_first: bool = Field(default=False, description="Empty the cart before adding.")


def _add_product(
    ctx: ToolContext, args: AddToCartArgs | AddToWishListArgs, collection: str, clear: bool
) -> None:
    """Add to the cart or wish list (``collection``), emptied first when ``clear``."""
    user = ctx.user(APP, args.access_token)
    product = ctx.find(APP, "products", args.product_id, "product")
    _check_inventory(product, args.quantity)
    if clear:
        _clear(ctx, collection, user)
    _add_entry(ctx, collection, user, args.product_id, args.quantity)


@apis.api("Add a quantity of a product to your cart.")
def add_product_to_cart(ctx: ToolContext, args: AddToCartArgs) -> JsonObject:
    _add_product(ctx, args, "cart_items", args.clear_cart_first)
    return {"message": "Product/s added to the cart."}


class CartQuantityArgs(AuthArgs):
    product_id: int = id_field("The product in the cart.")
    quantity: int = Field(ge=0, description="The new quantity (0 removes the product).")


@apis.api("Set the quantity of a product in your cart (0 removes it).")
def update_product_quantity_in_cart(ctx: ToolContext, args: CartQuantityArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    product = ctx.find(APP, "products", args.product_id, "product")
    entry = ctx.my(APP, "cart_items", user, product_id=args.product_id)
    if entry is None:
        raise ToolFailed("The product is not present in the cart.")
    _check_inventory(product, args.quantity)
    if args.quantity > 0:
        entry["quantity"] = args.quantity
    else:
        ctx.remove(APP, "cart_items", entry)
    return {"message": "Updated the quantity of the product in the cart."}


class CartProductArgs(AuthArgs):
    product_id: int = id_field("The product in the cart.")


@apis.api("Remove a product from your cart.")
def delete_product_from_cart(ctx: ToolContext, args: CartProductArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    ctx.find(APP, "products", args.product_id, "product")
    entry = ctx.my(APP, "cart_items", user, product_id=args.product_id)
    if entry is None:
        raise ToolFailed("The product is not present in the cart.")
    ctx.remove(APP, "cart_items", entry)
    return {"message": "Deleted the product from your cart."}


@apis.api("Empty your cart.")
def clear_cart(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    _clear(ctx, "cart_items", user)
    return {"message": "Cleared the items from your cart."}


@apis.api("The products in your wish list.")
def show_wish_list(ctx: ToolContext, args: AuthArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    out = []
    for entry in ctx.mine(APP, "wish_list_items", user):
        product = ctx.find(APP, "products", entry["product_id"], "product")
        out.append(
            {
                "product_id": product["product_id"],
                "product_name": product.get("name"),
                "quantity": entry["quantity"],
                "price": product.get("price"),
            }
        )
    return out


class AddToWishListArgs(AuthArgs):
    product_id: int = id_field("The product to add.")
    quantity: int = Field(default=1, ge=1, description="How many to add to what the wish list already holds.")
    clear_wish_list_first: bool = Field(default=False, description="Empty the wish list before adding.")


@apis.api("Add a quantity of a product to your wish list.")
def add_product_to_wish_list(ctx: ToolContext, args: AddToWishListArgs) -> JsonObject:
    _add_product(ctx, args, "wish_list_items", args.clear_wish_list_first)
    return {"message": "Product/s added to the wish list."}


class MoveArgs(AuthArgs):
    product_id: int = id_field("The product to move.")
    quantity: int = Field(default=1, ge=1, description="How many to move.")


def _move(ctx: ToolContext, args: MoveArgs, *, to_wish_list: bool) -> JsonObject:
    source, target = ("cart_items", "wish_list_items") if to_wish_list else ("wish_list_items", "cart_items")
    where, there = ("cart", "wish list") if to_wish_list else ("wish list", "cart")
    user = ctx.user(APP, args.access_token)
    ctx.find(APP, "products", args.product_id, "product")
    entry = ctx.my(APP, source, user, product_id=args.product_id)
    if entry is None:
        raise ToolFailed(f"The product is not available in the {where}.")
    held = int(entry.get("quantity", 0))
    if args.quantity > held:
        raise ToolFailed(
            f"The {where} only has {held} of this product, so can't move {args.quantity} to wish list."
        )
    if held == args.quantity:
        ctx.remove(APP, source, entry)
    else:
        entry["quantity"] = held - args.quantity
    _add_entry(ctx, target, user, args.product_id, args.quantity)
    return {"message": f"{args.quantity} product/s moved from the {where} to the {there}."}


@apis.api("Move a quantity of a product from your cart to your wish list.")
def move_product_from_cart_to_wish_list(ctx: ToolContext, args: MoveArgs) -> JsonObject:
    return _move(ctx, args, to_wish_list=True)


@apis.api("Move a quantity of a product from your wish list to your cart.")
def move_product_from_wish_list_to_cart(ctx: ToolContext, args: MoveArgs) -> JsonObject:
    return _move(ctx, args, to_wish_list=False)


# ---------------------------------------------------------------- cards and addresses

_CARD_FIELDS = (
    "payment_card_id",
    "card_name",
    "owner_name",
    "card_number",
    "expiry_year",
    "expiry_month",
    "cvv_number",
)
_ADDRESS_FIELDS = ("address_id", "name", "street_address", "city", "state", "country", "zip_code")


@apis.api("Your saved payment cards.")
def show_payment_cards(ctx: ToolContext, args: AuthArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    return [pick(c, *_CARD_FIELDS) for c in ctx.mine(APP, "payment_cards", user)]


class PaymentCardArgs(AuthArgs):
    payment_card_id: int = id_field("The payment card's id.")


@apis.api("One of your payment cards, by id.")
def show_payment_card(ctx: ToolContext, args: PaymentCardArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    card = ctx.owned(APP, "payment_cards", args.payment_card_id, "payment card", user)
    return pick(card, *_CARD_FIELDS)


@apis.api("Your saved addresses.")
def show_addresses(ctx: ToolContext, args: AuthArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    return [pick(a, *_ADDRESS_FIELDS) for a in ctx.mine(APP, "addresses", user)]


class AddAddressArgs(AuthArgs):
    name: str = Field(min_length=1, description="A name for the address, e.g. Home or Work.")
    street_address: str = Field(min_length=1, description="The street line.")
    city: str = Field(min_length=1, description="The city.")
    state: str = Field(min_length=1, description="The state.")
    country: str = Field(min_length=1, description="The country.")
    zip_code: int = Field(ge=10000, lt=100000, description="The 5-digit zip code.")


@apis.api("Save a new address.")
def add_address(ctx: ToolContext, args: AddAddressArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    address = ctx.insert(
        APP,
        "addresses",
        {"user_id": user["user_id"], **pick(args.model_dump(), *_ADDRESS_FIELDS[1:])},
        unique=("Address", ("user_id", "name")),
    )
    return {"message": "Added address to your account.", "address_id": address["address_id"]}


# ---------------------------------------------------------------- orders


def _order_view(ctx: ToolContext, order: dict[str, Any]) -> JsonObject:
    items = [
        {
            "product_id": i.get("product_id"),
            "ordered_quantity": i.get("ordered_quantity"),
            "returned_quantity": i.get("returned_quantity", 0),
            "gift_wrap_quantity": i.get("gift_wrap_quantity", 0),
            "price": i.get("price"),
            "expected_delivery_at": i.get("expected_delivery_at"),
            "delivered_at": i.get("delivered_at"),
        }
        for i in order.get("order_items", [])
    ]
    names = []
    for item in items:
        product = ctx.get(APP, "products", item["product_id"]) or {}
        kind = str(product.get("product_type", "item"))
        quantity = int(item["ordered_quantity"] or 0)
        names.append(f"{quantity} {singular(kind) if quantity == 1 else _plural(kind)}")
    fees = [order.get(f, 0.0) or 0.0 for f in ("delivery_fee", "tax", "gift_wrap_fee")]
    paid = sum(float(i["price"] or 0.0) * int(i["ordered_quantity"] or 0) for i in items) + sum(fees)
    return {
        "order_id": order["order_id"],
        "address_id": order.get("address_id"),
        "payment_card_id": order.get("payment_card_id"),
        "name": ", ".join(names),
        "tax": order.get("tax", 0.0),
        "delivery_fee": order.get("delivery_fee", 0.0),
        "gift_wrap_fee": order.get("gift_wrap_fee", 0.0),
        "discount": order.get("discount", 0.0),
        "created_at": order.get("created_at"),
        "address_text": order.get("address_text"),
        "payment_card_digits": order.get("payment_card_digits"),
        "paid_amount": max(money(paid - float(order.get("discount", 0.0) or 0.0)), 0.0),
        "order_items": items,
    }


class PlaceOrderArgs(AuthArgs):
    payment_card_id: int = id_field("The payment card to pay with.")
    address_id: int = id_field("The address to ship to.")


def _delivery_time(ctx: ToolContext, days: int) -> str:
    start = datetime.strptime(ctx.timestamp(), TIME_FORMAT) + timedelta(days=days)
    return start.replace(hour=19, minute=0, second=0).strftime(TIME_FORMAT)


@apis.api("Order everything in your cart, paid with one of your cards and shipped to one of your addresses.")
def place_order(ctx: ToolContext, args: PlaceOrderArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    card = ctx.owned(APP, "payment_cards", args.payment_card_id, "payment card", user)
    address = ctx.owned(APP, "addresses", args.address_id, "address", user)
    entries = ctx.mine(APP, "cart_items", user)
    if not entries:
        raise ToolFailed("The cart is empty, so can't place the order.")
    lines: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for entry in entries:
        product = ctx.get(APP, "products", entry["product_id"])
        if product is None:
            raise ToolFailed(
                f"Product with ID {entry['product_id']} is no longer available. "
                "Please remove it from your cart first to place the order."
            )
        if int(entry["quantity"]) > _inventory(product):
            raise ToolFailed(
                f"Product {product.get('name')} only has {_inventory(product)} quantity in the inventory. "
                "Cannot place the order. Please update the quantity in the cart."
            )
        lines.append((entry, product))
    base_cost = money(sum(int(e["quantity"]) * float(p.get("price", 0.0)) for e, p in lines))
    gift_wrap = money(sum(int(e.get("gift_wrap_quantity", 0)) * GIFT_WRAP_FEE for e, _ in lines))
    delivery = 0.0 if _is_prime(ctx, user) else DELIVERY_FEE
    tax = money(base_cost * TAX_PERCENT / 100)
    due = max(money(base_cost + gift_wrap + tax + delivery), 0.0)
    balance = float(card.get("balance", 0.0) or 0.0)
    if due > balance:
        raise ToolFailed("Your payment card doesn't have enough balance to place the order.")
    card["balance"] = money(balance - due)

    address_text = "\n".join(
        str(address.get(f, "")) for f in ("street_address", "city", "state", "country", "zip_code")
    )
    order = ctx.insert(
        APP,
        "orders",
        {
            "user_id": user["user_id"],
            "address_id": args.address_id,
            "payment_card_id": args.payment_card_id,
            "tax": tax,
            "delivery_fee": delivery,
            "gift_wrap_fee": gift_wrap,
            "discount": 0.0,
            "created_at": ctx.timestamp(),
            "address_text": address_text,
            "payment_card_digits": str(card.get("card_number", ""))[-4:],
            "order_items": [
                {
                    "product_id": p["product_id"],
                    "ordered_quantity": int(e["quantity"]),
                    "returned_quantity": 0,
                    "gift_wrap_quantity": int(e.get("gift_wrap_quantity", 0)),
                    "price": float(p.get("price", 0.0)),
                    "expected_delivery_at": _delivery_time(ctx, int(p.get("delivery_days", 1) or 1)),
                    "delivered_at": None,
                }
                for e, p in lines
            ],
        },
    )
    for entry, product in lines:
        product["inventory_quantity"] = _inventory(product) - int(entry["quantity"])
    _clear(ctx, "cart_items", user)
    _confirm(ctx, user, order["order_id"], lines)
    return {
        "message": f"Successfully placed the order. Debitted total amount of {due} from your card.",
        "order_id": order["order_id"],
    }


class OrdersArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for in the ordered products' names and types.")
    sort_by: str | None = Field(
        default=None,
        description="+field or -field, field one of paid_amount, created_at (default -created_at).",
    )


@apis.api("List or search your past orders (newest first).")
def show_orders(ctx: ToolContext, args: OrdersArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    views = [_order_view(ctx, o) for o in ctx.mine(APP, "orders", user)]
    products = {p["product_id"]: p for p in ctx.rows(APP, "products")}

    def text(view: dict[str, Any]) -> str:
        found = [products.get(i["product_id"], {}) for i in view["order_items"]]
        return " ".join(f"{p.get('name', '')} {p.get('product_type', '')}" for p in found)

    return retrieve(
        ((text(v), v) for v in views), args, ("paid_amount", "created_at"), default_sort="-created_at"
    )


class OrderArgs(AuthArgs):
    order_id: int = id_field("The order's id.")


@apis.api("One of your orders, by id.")
def show_order(ctx: ToolContext, args: OrderArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _order_view(ctx, ctx.owned(APP, "orders", args.order_id, "order", user))


def _confirm(
    ctx: ToolContext, user: dict[str, Any], order_id: int, lines: list[tuple[dict[str, Any], dict[str, Any]]]
) -> None:
    """Mail the order confirmation to the user's gmail account (nothing when either side has no
    gmail account)."""
    from world.episodes.apps.gmail import deliver_email  # gmail may import this module

    name = f"{user.get('first_name', '')} {user.get('last_name', '')}".strip()
    items = "\n".join(f"- {e['quantity']} quantity of {p.get('name')}" for e, p in lines)
    body = (
        f"Hi {name},\n\nWe have received your order #{order_id} and it is on its way.\n\n"
        f"Items:\n{items}\n\nThe receipt is attached.\n\nAmazon"
    )
    deliver_email(
        ctx,
        sender=NOTIFIER,
        recipients=[str(user.get("email"))],
        subject="Amazon Order Confirmation",
        body=body,
        attachment_names=[f"order_{order_id}.txt"],
    )


# ---------------------------------------------------------------- the tools

TOOLS = apis.tools
