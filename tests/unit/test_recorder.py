"""The recorder's conversion (a recording → a flow) and its event ordering, without a browser."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from core.errors import SpecError
from core.flows.placeholders import SHOP_FIELDS, check_flow
from core.recorder import (
    TOOLBAR_TEXTS,
    Action,
    Changed,
    Loaded,
    Navigation,
    Pick,
    Post,
    Recorder,
    Recording,
    ShopLogin,
    flow_from_recording,
    open_recorder,
    write_flow_file,
)
from core.recorder._page_script import page_script

BASE = "http://pdd.shopfleet.test:8080/shop/pdd-1"
SHOP = ShopLogin(BASE, "pdd-1", "s3cret-pa{ss}")
USER = 'internal:role=textbox[name="User name"i]'
PASS = 'internal:role=textbox[name="Password"i]'
LOGIN = 'internal:role=button[name="Log in"i]'
REPLY = 'internal:role=textbox[name="Reply"i]'
SEND = 'internal:role=button[name="Send reply"i]'


def login(*, enter: bool = False) -> list[object]:
    submit: list[object] = ([Action("press", PASS, key="Enter")] if enter
                            else [Action("click", LOGIN)])
    return [Action("click", USER), Action("fill", USER, "pdd-1"),
            Action("fill", PASS, "s3cret-pa{ss}"), *submit,
            Post(f"{BASE}/login", True), Loaded()]


def reply_recording(*, enter: bool = False, changed: bool = True) -> Recording:
    events: list[object] = [
        Action("openPage"), Navigation(f"{BASE}/messages/42"), Loaded(),
        Action("navigate"), *login(enter=enter),
        Action("fill", REPLY, "Ships {today}"), Action("click", SEND),
        Post(f"{BASE}/messages/42", True), Loaded()]
    if changed:
        events.append(Changed((("#notice", "Thanks"), ("#sent-replies", "Hi\nShips {today}"))))
    return Recording(events)  # type: ignore[arg-type]


def steps_of(rec: Recording, **kw: object) -> list[dict[str, object]]:
    out = flow_from_recording(rec, name="rec", shop=SHOP, **kw)  # type: ignore[arg-type]
    return json.loads(out.to_json())["steps"]  # type: ignore[no-any-return]


def test_credentials_become_shop_placeholders_and_are_kept_nowhere() -> None:
    out = flow_from_recording(reply_recording(), name="rec", shop=SHOP)
    text = out.to_json()
    assert "s3cret" not in text and "s3cret" not in json.dumps(out.params)
    assert "s3cret" not in repr(out) and "s3cret" not in repr(reply_recording())
    steps = json.loads(text)["steps"]
    assert [s.get("text") for s in steps if s["action"] == "type_text"] == [
        "{shop.username}", "{shop.password}", "{params.reply}"]
    assert out.params == {"message_id": "42", "reply": "Ships {today}"}
    # The placeholders are ones a task submission accepts, with the recorded values.
    check_flow(out.flow, params=out.params, shop_fields=SHOP_FIELDS)


def test_a_password_field_that_is_not_the_shops_is_a_parameter_without_its_value() -> None:
    rec = Recording([Navigation(f"{BASE}/pay"),
                     Action("fill", 'internal:role=textbox[name="Payment password"i]', "9876")])
    out = flow_from_recording(rec, name="rec", shop=SHOP)
    assert "9876" not in out.to_json() and "9876" not in json.dumps(out.params)
    assert out.flow.steps[1].text == "{params.payment_password}"  # type: ignore[union-attr]
    assert "payment_password" not in out.params and any("password" in n for n in out.notes)


def test_login_is_wrapped_in_if_visible_and_is_not_a_write() -> None:
    steps = steps_of(reply_recording())
    assert [(s["action"], s.get("if_visible"), s.get("write", False)) for s in steps[:4]] == [
        ("navigate", None, False), ("type_text", LOGIN, False), ("type_text", LOGIN, False),
        ("click", LOGIN, False)]
    assert [s["name"] for s in steps[1:4]] == ["log in: User name", "log in: Password", "log in"]
    # Logged in with Enter: the password field is what shows the login form.
    steps = steps_of(reply_recording(enter=True))
    assert [(s["action"], s.get("if_visible")) for s in steps[1:4]] == [
        ("type_text", PASS), ("type_text", PASS), ("press_key", PASS)]
    assert steps[3]["key"] == "Enter"


def test_a_click_followed_by_a_post_is_a_write_with_a_verify_showing_the_typed_value() -> None:
    steps = steps_of(reply_recording())
    send = steps[5]
    assert (send["action"], send["write"], send["interruptible"]) == ("click", True, False)
    assert send["verify"] == {"locator": "#sent-replies", "text": "{params.reply}"}
    assert sum(1 for s in steps if s.get("write")) == 1


def test_without_a_typed_value_shown_the_first_change_is_the_verify_and_none_is_a_note() -> None:
    rec = Recording([Navigation(f"{BASE}/campaigns/3"), Action("check", "#agree"),
                     Action("click", "#confirm"), Post(f"{BASE}/campaigns/3", True),
                     Changed((("#status", "Signed {up}"),))])
    steps = steps_of(rec)
    assert steps[1]["action"] == "click" and "write" not in steps[1]
    assert steps[2]["verify"] == {"locator": "#status", "text": "Signed {{up}}"}
    out = flow_from_recording(reply_recording(changed=False), name="rec", shop=SHOP)
    assert out.flow.steps[5].write and out.flow.steps[5].verify is None
    assert any("add a verify" in n for n in out.notes)


def test_a_post_after_no_click_or_enter_is_reported_not_guessed() -> None:
    rec = Recording([Navigation(f"{BASE}/x"), Action("fill", REPLY, "hi"),
                     Post(f"{BASE}/autosave", False)])
    out = flow_from_recording(rec, name="rec", shop=SHOP)
    assert not any(s.write for s in out.flow.steps)
    assert any("/shop/pdd-1/autosave was not matched" in n for n in out.notes)


def test_navigations_use_the_shop_base_url_and_parameters_for_ids_and_query_values() -> None:
    rec = Recording([Navigation(f"{BASE}/campaigns/3/items/17?page=2&sort=new"),
                     Navigation("https://help.example/{x}")])
    out = flow_from_recording(rec, name="rec", shop=SHOP)
    assert out.flow.start_url == (
        "{shop.base_url}/campaigns/{params.campaign_id}/items/{params.item_id}"
        "?page={params.page}&sort={params.sort}")
    assert out.params == {"campaign_id": "3", "item_id": "17", "page": "2", "sort": "new"}
    assert out.flow.steps[1].url == "https://help.example/{{x}}"  # type: ignore[union-attr]


def test_uploads_are_asset_relative_parameters(tmp_path: Path) -> None:
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "teapot.png").write_bytes(b"png")
    rec = Recording([Navigation(f"{BASE}/products/new"),
                     Action("fill", 'internal:role=button[name="Image"i]',
                            "C:\\fakepath\\teapot.png"),
                     Action("fill", 'internal:role=button[name="Manual"i]',
                            "C:\\fakepath\\manual.pdf")])
    out = flow_from_recording(rec, name="rec", shop=SHOP, asset_dirs=[tmp_path])
    assert [(s.action, s.path) for s in out.flow.steps[1:]] == [  # type: ignore[union-attr]
        ("upload_file", "{params.image}"), ("upload_file", "{params.manual}")]
    assert out.params == {"image": "shots/teapot.png", "manual": "manual.pdf"}
    assert any("manual.pdf" in n for n in out.notes)


def test_parameter_names_come_from_labels_can_be_renamed_and_never_collide() -> None:
    rec = Recording([Navigation(f"{BASE}/f"),
                     Action("fill", REPLY, "a"), Action("fill", REPLY + " >> nth=1", "b"),
                     Action("fill", 'internal:label="2nd address"i', "c"),
                     Action("fill", 'internal:label="收件人"i', "d"),
                     Action("select", 'internal:label="Category"i', options=("home",))])
    out = flow_from_recording(rec, name="rec", shop=SHOP, param_names={"category": "kind"})
    assert out.params == {"reply": "a", "reply_2": "b", "p_2nd_address": "c", "text": "d",
                          "kind": "home"}


def test_picks_become_extract_and_assert_steps_with_placeholders_in_locators() -> None:
    rec = Recording([Navigation(f"{BASE}/messages/42"), Action("fill", REPLY, "Red teapot"),
                     Pick("extract_all", "#stats td.sku", False, "X-1", hint="SKU"),
                     Pick("extract_all", "#stats td.views", False, "3", name="seen"),
                     Pick("extract", 'internal:role=cell[name="X"i]', True, "X", hint="Views"),
                     Pick("assert_text", 'internal:text="Red teapot"i', True, "Red teapot"),
                     Pick("assert_text", "#total", True, "Total {7}")])
    steps = steps_of(rec)[2:]
    assert [(s["action"], s.get("into"), s.get("all")) for s in steps[:3]] == [
        ("extract", "skus", True), ("extract", "seen", True), ("extract", "views", None)]
    assert steps[3] == {"name": "check the text", "action": "assert_text",
                        "locator": 'internal:text="{params.reply}"i', "text": "{params.reply}"}
    assert steps[4]["text"] == "Total {{7}}"


def test_the_recorders_noise_is_dropped() -> None:
    rec = Recording([Action("openPage"), Navigation(f"{BASE}/f"), Action("navigate"),
                     Action("click", REPLY), Action("fill", REPLY, "x"),
                     Action("press", REPLY, key="Enter"), Action("click", SEND, click_count=0),
                     Action("press", REPLY, key="a", modifiers=2), Action("dblclick", SEND),
                     Action("assertVisible", SEND), Action("assertText", SEND, "Send"),
                     Action("click", "internal:role=link >> nth=3")])
    out = flow_from_recording(rec, name="rec", shop=SHOP)
    assert [(s.action, getattr(s, "key", None)) for s in out.flow.steps] == [
        ("navigate", None), ("type_text", None), ("press_key", "Enter"),
        ("press_key", "Control+a"), ("wait_element", None), ("assert_text", None),
        ("click", None)]
    assert any("'dblclick'" in n for n in out.notes)
    assert any("by position" in n for n in out.notes)


def test_nothing_recorded_or_no_page_opened_is_refused_with_the_field() -> None:
    with pytest.raises(SpecError) as err:
        flow_from_recording(Recording([]), name="rec", shop=SHOP)
    assert err.value.field == "steps"
    with pytest.raises(SpecError, match="opened no page"):
        flow_from_recording(Recording([Action("click", SEND)]), name="rec", shop=SHOP)


def test_write_flow_file_never_overwrites_a_file_or_a_known_flow(tmp_path: Path) -> None:
    out = flow_from_recording(reply_recording(), name="my_reply", shop=SHOP)
    path = write_flow_file(out, tmp_path / "flows", taken=["reply_customer"])
    assert json.loads(path.read_text())["name"] == "my_reply"
    from core.flows.registry import read_flow_file
    assert read_flow_file(path) == out.flow
    with pytest.raises(SpecError, match="exists already"):
        write_flow_file(out, tmp_path / "flows")
    shipped = flow_from_recording(reply_recording(), name="reply_customer", shop=SHOP)
    with pytest.raises(SpecError, match="exists already") as err:
        write_flow_file(shipped, tmp_path / "other", taken=["reply_customer"])
    assert err.value.field == "name" and not (tmp_path / "other").exists()
    bad = flow_from_recording(reply_recording(), name="../evil", shop=SHOP)
    with pytest.raises(SpecError, match="letters, digits"):
        write_flow_file(bad, tmp_path / "flows")


def test_what_follows_a_held_back_click_is_recorded_after_it() -> None:
    """Playwright reports a left click ~0.5 s late; the POST it caused must come after it,
    or the write would be given to the wrong step."""

    async def go() -> list[object]:
        rec = Recorder(None, lang="en")
        rec.action_added("p", {"name": "fill", "selector": REPLY, "text": "x"}, "")
        rec._gesture()                              # the person clicks Send
        rec._add(Post(f"{BASE}/messages/42", True))  # its POST arrives first
        rec._add(Loaded())
        rec.action_added("p", {"name": "click", "selector": SEND, "clickCount": 1}, "")
        rec._add(Pick("assert_text", "#x", True, "x"))
        return list(rec.recording().events)

    events = asyncio.run(go())
    assert [type(e).__name__ for e in events] == ["Action", "Action", "Post", "Loaded", "Pick"]
    assert isinstance(events[1], Action) and events[1].name == "click"


def test_typing_updates_one_fill_and_does_not_repeat_it() -> None:
    async def go() -> list[object]:
        rec = Recorder(None, lang="en")
        for text in ("h", "hi", "hi!"):
            rec.action_updated("p", {"name": "fill", "selector": REPLY, "text": text}, "")
        return list(rec.recording().events)

    events = asyncio.run(go())
    assert len(events) == 1 and isinstance(events[0], Action) and events[0].text == "hi!"


def test_the_toolbar_speaks_english_and_chinese() -> None:
    assert set(TOOLBAR_TEXTS) == {"en", "zh"}
    assert TOOLBAR_TEXTS["en"].keys() == TOOLBAR_TEXTS["zh"].keys()
    assert "提取此项" in page_script("zh") and "Extract this" in page_script("en")
    assert "__TEXTS__" not in page_script("zh")

    async def bad() -> None:
        async with open_recorder(None, lang="fr"):
            pass

    with pytest.raises(SpecError) as err:
        asyncio.run(bad())
    assert err.value.field == "lang"
