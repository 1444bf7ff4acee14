"""Settings: where data, caches and Prefect state live, which providers to use.

Sources, highest priority first: CLI flags (passed as overrides), environment variables
(``SEGBENCH_*``), a TOML config file (``--config``, ``$SEGBENCH_CONFIG`` or ``./segbench.toml``), the
defaults below. Only flows and the CLI read settings; tasks take explicit arguments.

:func:`configure_runtime` turns settings into the environment Prefect, DVC and matplotlib read at
import time. It must run before ``prefect`` is imported, which is why the CLI imports flows lazily.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from segbench.core.errors import InputError
from segbench.core.paths import blocking_file
from segbench.schemas.rounds import LabelStudioConnection

DEFAULT_CONFIG_NAME = "segbench.toml"
LABEL_STUDIO_CONNECTION = "connection.json"


# What a model server on this machine gets unless set: one request at a time, a long deadline, one retry.
LOCAL_SERVER: dict[str, int | float] = {"openai_concurrency": 1, "openai_timeout": 300, "openai_max_retries": 1}


def is_loopback(url: str | None) -> bool:
    """Whether ``url`` names a server on this machine (localhost, 127.0.0.0/8, ::1)."""
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _derived(field: str, name: str) -> Callable[[dict[str, Any]], Path]:
    """A path's default inside another setting's folder, so every file segbench writes stays inside
    the project unless configured. (A field that failed validation is reported on its own.)"""
    return lambda validated: Path(validated.get(field, ".")) / name


class Settings(BaseSettings):
    """All knobs of a segbench installation. Relative paths are taken from the working directory."""

    model_config = SettingsConfigDict(env_prefix="SEGBENCH_", extra="forbid")

    data_root: Path = Field(Path("data"), description="where datasets, round records and caches are written "
                            "(DVC-tracked)")
    work_dir: Path = Field(Path(".segbench"), description="Prefect state, demo inputs, temporary files")
    # Each default below depends on a field above it (pydantic validates fields in this order).
    prefect_home: Path = Field(default_factory=_derived("work_dir", "prefect"),
                               description="Prefect's home (default: <work_dir>/prefect)")
    prefect_result_storage: Path = Field(default_factory=_derived("prefect_home", "results"),
                                         description="Prefect's result storage (default: <prefect_home>/results)")
    fiftyone_dir: Path = Field(default_factory=_derived("work_dir", "fiftyone"),
                               description="FiftyOne's environment, database and view files for segbench view "
                                           "(default: <work_dir>/fiftyone; scripts/fiftyone.sh install fills it)")
    cache_dir: Path = Field(default_factory=_derived("data_root", "cache"),
                            description="content-addressed LLM and edit answers (default: <data_root>/cache)")
    reports_dir: Path = Field(default_factory=lambda validated: Path(validated.get("data_root", ".")).parent / "reports",
                              description="evaluation reports: results, kept out of the versioned data "
                              "(default: reports beside the data root)")
    provider: Literal["offline", "openai"] = Field("offline", description="the language provider: offline "
                                                   "(WordNet) or openai (any OpenAI-compatible server)")
    openai_base_url: str | None = Field(None, description="an OpenAI-compatible server (llama.cpp, Ollama, vLLM); "
                                        "default: OpenAI's")
    openai_model: str = Field("gpt-4o-mini", description="the chat model language questions go to")
    openai_api_key: SecretStr | None = Field(None, description="the key (default: OPENAI_API_KEY)")
    # The next three default to a hosted API's values; a server on this machine gets LOCAL_SERVER's.
    openai_concurrency: int = Field(4, ge=1, description="chat requests in flight at once (default: 4; 1 for a "
                                    "server on this machine)")
    openai_max_retries: int = Field(4, ge=0, description="retries of a failed request, with backoff (default: 4; "
                                    "1 for a server on this machine)")
    openai_timeout: float = Field(60, gt=0, description="seconds per chat request (default: 60; 300 for a server "
                                  "on this machine)")
    openai_token_margin: float = Field(1.5, ge=0, allow_inf_nan=False, description="each request's max_tokens is "
                                       "the tokens its answer schema needs times this; 0 sends no cap")
    openai_price_per_1k: tuple[float, float] | None = Field(
        None, description="USD per 1,000 input and output tokens, for the cost a run reports")
    openai_image_model: str = Field("gpt-image-1", description="the image-edit model (CAFE): a gpt-image model "
                                    "or dall-e-2")
    openai_image_timeout: float = Field(300, gt=0, description="seconds per image edit; they take far longer "
                                        "than chat answers")
    editor: Literal["provider", "pillow", "openai"] = Field(
        "provider", description="the CAFE image editor: provider (the Pillow compositor when provider is offline, "
                                "OpenAI image edits when it is openai), pillow, or openai (e.g. a local model plans "
                                "and the compositor edits: provider = openai, editor = pillow)")
    openai_image_base_url: str | None = Field(None, description="an OpenAI-compatible images endpoint for edits "
                                              "(default: openai_base_url)")
    replay_only: bool = Field(False, description="answer language questions from the cache only; a miss is an "
                              "error")
    spacy_model: str = Field("en_core_web_sm", description="the spaCy pipeline the noun miner uses")
    label_studio_url: str = Field("http://127.0.0.1:8089", description="the Label Studio server (default: what "
                                  "scripts/label-studio.sh start recorded)")
    label_studio_token: SecretStr | None = Field(None, description="its API token (default: what the script "
                                                 "recorded)")
    label_studio_dir: Path = Field(default_factory=_derived("work_dir", "label-studio"),
                                   description="the folder scripts/label-studio.sh runs its server from "
                                   "(default: <work_dir>/label-studio)")
    # The only folder the server serves files from; rounds copy their images into it.
    label_studio_files: Path = Field(default_factory=_derived("label_studio_dir", "files"),
                                     description="the folder the server serves files from (default: "
                                     "<label_studio_dir>/files, or what the script recorded)")
    label_studio_timeout: float = Field(30.0, gt=0, allow_inf_nan=False, description="seconds a connection or "
                                        "a read may wait; a whole request ends within four times this")
    dvc_remote: str | None = Field(None, description="the DVC remote published versions are pushed to")
    hub_endpoint: str | None = Field(None, description="the Hugging Face Hub release --push uploads to "
                                     "(default: huggingface.co)")
    hub_token: SecretStr | None = Field(None, description="the Hub token (default: HF_TOKEN)")
    telemetry: bool = Field(False, description="Prefect and DVC telemetry stay off unless set")
    track_evaluations: bool = Field(False, description="evaluate and release commands run as Prefect flows (as --track)")
    server_idle_minutes: float = Field(30.0, ge=0, allow_inf_nan=False, description="a command that runs a flow "
                                       "with no Prefect server up starts one that stops after this long unused; "
                                       "0: a private server for each command instead, stopped with it")

    @model_validator(mode="after")
    def _size_for_a_local_model_server(self) -> Settings:
        """A model server on this machine (llama.cpp, Ollama, vLLM on 127.0.0.1) answers one request
        at a time and slowly: requests queued on it would time out, and retrying a local failure
        rarely helps. Explicit settings still win."""
        if not is_loopback(self.openai_base_url):
            return self
        for field, value in LOCAL_SERVER.items():
            if field not in self.model_fields_set:
                setattr(self, field, value)
        return self

    @model_validator(mode="after")
    def _connect_to_local_label_studio(self) -> Settings:
        """Take the URL, token and files folder ``scripts/label-studio.sh start`` recorded, unless set.

        The script runs the server on the port and folder it is told, so the one place both agree
        on is the file it writes; explicit settings (flags, environment, config file) still win.
        """
        path = self.label_studio_dir / LABEL_STUDIO_CONNECTION
        if not path.is_file():
            return self
        url, token, files = _recorded_connection(path)
        if "label_studio_url" not in self.model_fields_set:
            self.label_studio_url = url
        if "label_studio_token" not in self.model_fields_set:
            self.label_studio_token = SecretStr(token)
        if "label_studio_files" not in self.model_fields_set:
            self.label_studio_files = Path(files)
        return self

    def label_studio(self) -> LabelStudioConnection:
        """The Label Studio server these settings point at, as the round flows take it."""
        return LabelStudioConnection(url=self.label_studio_url, token=self.label_studio_token,
                                     files=self.label_studio_files, timeout=self.label_studio_timeout,
                                     annotators=self._annotator_servers())

    def _annotator_servers(self) -> dict[str, LabelStudioConnection]:
        """The annotators' own servers ``scripts/label-studio.sh start --annotator NAME`` recorded."""
        servers = {}
        for path in sorted((self.label_studio_dir / "annotators").glob(f"*/{LABEL_STUDIO_CONNECTION}")):
            url, token, files = _recorded_connection(path)
            servers[path.parent.name] = LabelStudioConnection(url=url, token=SecretStr(token), files=Path(files),
                                                              timeout=self.label_studio_timeout)
        return servers

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: tuple[PydanticBaseSettingsSource, ...] = (init_settings, env_settings)
        if settings_cls.model_config.get("toml_file"):
            sources += (_CheckedTomlSource(settings_cls),)
        return sources


class _CheckedTomlSource(TomlConfigSettingsSource):
    """The TOML config source, with unreadable, non-UTF-8 or malformed files as typed errors."""

    def _read_file(self, file_path: Path) -> dict[str, Any]:  # type: ignore[override]
        return read_config_file(file_path)


def read_config_file(path: Path) -> dict[str, Any]:
    """The table of a TOML config file.

    Raises:
        InputError: the file is missing, a directory, unreadable, not UTF-8 or not TOML.
    """
    from segbench.core.io import read_text  # numpy and Pillow come with it: not at start-up

    text = read_text(path, encoding="utf-8-sig", hint="check --config / $SEGBENCH_CONFIG")  # a BOM is accepted
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise InputError("TOML nested too deeply to read", path=path, hint="settings are flat: key = value") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path,
                         hint="correct the syntax at that line (strings need quotes: data_root = \"data\")") from exc


def find_config_file(explicit: str | Path | None = None) -> Path | None:
    """The config file in force: the explicit one, ``$SEGBENCH_CONFIG``, or ``./segbench.toml``."""
    if explicit is not None or os.environ.get("SEGBENCH_CONFIG"):
        path = Path(explicit or os.environ["SEGBENCH_CONFIG"])
        if path.is_dir():
            raise InputError("expected a config file, found a directory", path=path,
                             hint=f"give the TOML file itself, e.g. {path / DEFAULT_CONFIG_NAME}")
        if not path.is_file():
            raise InputError("config file not found", path=path, hint="check --config / $SEGBENCH_CONFIG")
        return path
    default = Path(DEFAULT_CONFIG_NAME)
    return default if default.is_file() else None


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from flags (``overrides``; ``None`` values are ignored), env, config file, defaults.

    Raises:
        InputError: the config file is missing, or a value anywhere is invalid (names the key).
    """
    path = find_config_file(config_file)
    cls: type[Settings] = Settings
    if path is not None:
        cls = type("FileSettings", (Settings,), {"model_config": {**Settings.model_config, "toml_file": path}})
    try:
        settings = cls(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise _setting_error(exc.errors()[0], path, overrides) from exc
    for name in ("data_root", "work_dir"):
        _check_folder(getattr(settings, name), name)
    return settings


def _setting_error(error: Any, path: Path | None, overrides: dict[str, Any]) -> InputError:
    """Name the bad key, where it was set (flag, variable or config file) and how to fix it."""
    key = ".".join(str(p) for p in error["loc"])
    if not key:  # a rule across several settings
        return InputError(f"invalid settings: {error['msg']}", path=path, hint="correct the settings it names")
    env = f"SEGBENCH_{key.upper()}"
    if overrides.get(key) is not None:
        where, source = f"the --{key.replace('_', '-')} flag", None
    elif env in os.environ:
        where, source = f"the {env} variable", None
    else:
        where, source = "the config file", path
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(key, Settings.model_fields, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        return InputError(f"unknown setting {key!r}", path=source,
                          hint=f"{guess}remove or rename it in {where}; "
                               f"known settings: {', '.join(sorted(Settings.model_fields))}")
    got = error.get("input")
    shown = f" (got {got!r})" if isinstance(got, (str, int, float, bool)) and not _secret(key) else ""
    return InputError(f"invalid setting {key!r}: {error['msg']}{shown}", path=source,
                      hint=f"correct {key} in {where}")


def _secret(key: str) -> bool:
    return "token" in key or "key" in key or "password" in key


def _check_folder(path: Path, name: str) -> None:
    """``data_root`` and ``work_dir`` are folders segbench reads and writes: refuse anything else early."""
    flag = f"--{name.replace('_', '-')}"
    blocker = blocking_file(path)  # the folder itself is made on first write
    if blocker is not None:
        raise InputError("expected a directory, found a file", path=blocker,
                         hint=f"point {flag} (or {name} in segbench.toml) at a folder, or move the file away")
    if path.is_dir() and not os.access(path, os.R_OK | os.X_OK):
        raise InputError("permission denied", path=path,
                         hint=f"make the folder readable by this user (chmod u+rwx {path}), or choose another {flag}")


def ensure_prefect_home() -> None:
    """Create ``PREFECT_HOME`` (as :func:`configure_runtime` exported it) with every level above it:
    Prefect creates only the last level when it is imported. Called just before a flow module
    imports Prefect, so a command that runs no flow, or is refused first, leaves no folder behind.

    Raises:
        InputError: the folder cannot be created (names it).
    """
    home = os.environ.get("PREFECT_HOME")
    if not home:
        return
    try:
        Path(home).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the Prefect state folder ({exc.strerror})", path=home,
                         hint="choose a --work-dir this user can write to") from exc


def configure_runtime(settings: Settings, *, verbose: bool = False) -> None:
    """Export the environment Prefect, DVC and matplotlib read when they are imported.

    Telemetry is off unless ``settings.telemetry``; state goes under ``settings.work_dir`` rather
    than the user's home. Prefect's console logs are hidden unless ``verbose`` (the CLI shows
    progress and a summary; the run logs still reach the Prefect API and its UI).
    """
    work = settings.work_dir.resolve()
    env = {
        "PREFECT_HOME": str(settings.prefect_home.resolve()),
        "PREFECT_LOCAL_STORAGE_PATH": str(settings.prefect_result_storage.resolve()),
        "DVC_SITE_CACHE_DIR": str(work / "dvc-site-cache"),
        "MPLCONFIGDIR": str(work / "matplotlib"),
        "HF_HOME": str(work / "huggingface"),  # the Sentence-BERT baseline loads offline, but may cache
    }
    os.environ.update(env)
    # A cold ephemeral Prefect API takes 8-17 s to start here; the 20 s default is too tight.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    if not settings.telemetry:
        os.environ.update(
            {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "DVC_NO_ANALYTICS": "1"}
        )


def _recorded_connection(path: Path) -> tuple[str, str, str]:
    """The URL, token and files folder ``scripts/label-studio.sh start`` recorded in ``path``."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        return str(recorded["url"]), str(recorded["token"]), str(recorded["files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"unreadable Label Studio connection file ({type(exc).__name__})", path=path,
                         hint="restart the server with scripts/label-studio.sh start, or delete the file") from exc
