"""The kit's Hydra configs (``luong_lit/conf/``, shipped inside the package), and composing them
outside a Hydra app."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from luong_lit.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parent / "conf"  # the kit's Hydra configs


def compose(overrides: Sequence[str], config_name: str = "train"):
    """``conf/<name>.yaml`` with ``overrides``, composed as ``python -m luong_lit train`` does."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    from luong_lit.sweeps.job import register_resolvers

    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return hydra_compose(config_name, overrides=list(overrides))
    except HydraException as err:
        first = str(err).strip().splitlines()[0]  # the rest is Hydra's search path
        raise ConfigError(f"cannot compose the config: {first}") from None
