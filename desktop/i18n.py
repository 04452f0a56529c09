"""Translations: English source strings, Chinese (zh_CN) through Qt's translation system.

Every visible string goes through :func:`tr` (or ``QT_TR_NOOP`` where it is stored untranslated
and translated when shown), all in one context, so ``pyside6-lupdate desktop -ts
resources/translations/shopfleet_zh_CN.ts`` finds them and ``pyside6-lrelease`` compiles the
``.qm`` the console loads. The language follows the OS locale unless the operator chose one.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale, QSettings, QTranslator

from core import resources_dir

LANGUAGES: dict[str, str] = {"system": "System", "en": "English", "zh_CN": "中文 (简体)"}
"""Language choices: ``system`` follows the OS locale."""

_installed: list[QTranslator] = []


def QT_TR_NOOP(text: str) -> str:
    """Mark ``text`` for translation where it is defined; :func:`tr` translates it where it
    is shown. (Qt's own returns ``object`` in PySide6's stubs.)"""
    return text


def tr(text: str, *args: object) -> str:
    """Translate ``text`` now; ``%1``, ``%2``… are replaced by ``args``."""
    out = QCoreApplication.translate("", text)
    for i, a in enumerate(args, start=1):
        out = out.replace(f"%{i}", str(a))
    return out


def translations_dir() -> str:
    return str(resources_dir() / "translations")


def resolve_language(choice: str | None) -> str:
    """``en`` or ``zh_CN`` for a choice (``system`` or none: from the OS locale)."""
    if choice in ("en", "zh_CN"):
        return choice
    name = QLocale.system().name()
    return "zh_CN" if name.startswith("zh") else "en"


def saved_language() -> str:
    value = QSettings().value("language", "system")
    return str(value) if value in LANGUAGES else "system"


def save_language(choice: str) -> None:
    QSettings().setValue("language", choice)


def install_language(choice: str | None) -> str:
    """Load the translation for ``choice`` into the application (replacing the previous one);
    returns the language in use. Widgets get a ``LanguageChange`` event and retranslate."""
    app = QCoreApplication.instance()
    lang = resolve_language(choice)
    for t in _installed:
        if app is not None:
            app.removeTranslator(t)
    _installed.clear()
    if lang != "en" and app is not None:
        t = QTranslator(app)
        if t.load(f"shopfleet_{lang}", translations_dir()):
            app.installTranslator(t)
            _installed.append(t)
        qt = QTranslator(app)  # Qt's own strings (standard buttons), when the Qt build has them
        if qt.load(QLocale(lang), "qtbase", "_", _qt_translations()):
            app.installTranslator(qt)
            _installed.append(qt)
    return lang


def _qt_translations() -> str:
    from PySide6.QtCore import QLibraryInfo

    return QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
