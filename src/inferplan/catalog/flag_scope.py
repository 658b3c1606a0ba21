"""Whom a setting's launch value holds for under data parallelism, by the engine's flag record.

The plan's running cap is each data-parallel rank's (as the memory and speed models run it); where the
engine's flag is the instance's total over its ranks (``RankScope``: SGLang's --max-running-requests under
DP attention) the launch writes it times the ranks. ``deploy`` writes the value so and ``fit`` says it so.
A flag younger than the stated release (``FlagRule.first_release``) is neither named nor taken.
"""

from __future__ import annotations

from inferplan.catalog.flag_parts_schema import OptionRule
from inferplan.catalog.flags_schema import EngineFlags, FlagRule
from inferplan.catalog.memory_rules import parse_engine_version
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment


def option_rule(flags: EngineFlags, setting: str) -> OptionRule | None:
    """The options-file entry of a setting the launcher has no flag for."""
    if setting in flags.settings or flags.options_file is None:
        return None
    return flags.options_file.settings.get(setting)


def runs_attention_dp(d: Deployment, flags: EngineFlags) -> bool:
    """Whether the launcher runs ``d``'s data-parallel ranks as attention data parallelism (the DP flag folds
    into the tensor-parallel ranks: SGLang with expert parallelism, TensorRT-LLM always), not whole copies."""
    rule = flags.settings.get("data_parallel_size")
    if rule is not None:
        return rule.folds_into is not None and (rule.folds_with is None or bool(getattr(d, rule.folds_with)))
    option = option_rule(flags, "data_parallel_size")
    return option is not None and option.folds_into is not None


def ranks_in_value(d: Deployment, flags: EngineFlags, rule: FlagRule) -> int:
    """The data-parallel ranks whose caps the flag of ``rule`` totals under ``d``: the data-parallel size where
    the flag is the instance's total (``FlagRule.data_parallel``), else 1 (each rank takes the value as it is)."""
    dp = d.data_parallel_size or 1
    if rule.data_parallel is None or dp < 2:
        return 1
    scope = rule.data_parallel.attention_dp if runs_attention_dp(d, flags) else rule.data_parallel.copies
    return dp if scope == "instance" else 1


def per_rank_value(d: Deployment, flags: EngineFlags, rule: FlagRule, value: object) -> object:
    """``value`` as the flag takes it under ``d``'s data parallelism: the plan's cap is each data-parallel
    rank's, given as it is where the engine applies the flag to each rank, and times the data-parallel size
    where the flag is the instance's total (``ranks_in_value``)."""
    return value * ranks_in_value(d, flags, rule) if isinstance(value, int) else value


def stated_release(d: Deployment) -> str | None:
    """The release number ``d``'s engine_version names (None: none stated, or none readable there)."""
    try:
        return parse_engine_version(d.engine_version)[0] if d.engine_version else None
    except ValueError:  # refused, naming engine_version, where the release is planned
        return None


def flag_at(rule: FlagRule, release: str | None) -> bool:
    """Whether the engine has ``rule``'s flag at ``release`` (None: the newest release): from its ``first_release``."""
    return rule.exists_at(release)


def check_flag_release(rule: FlagRule, setting: str, release: str | None, unset: str = "none stated") -> None:
    """Refuse ``setting`` where its flag is younger than the planned ``release`` (``FlagRule.first_release``);
    ``unset``: the value that needs no flag."""
    if not flag_at(rule, release):
        raise UnsupportedSettingError(f"{setting} is {rule.flags[0]}, which the engine has from {rule.first_release} on, "
                                      f"and the plan is at engine_version {release}", field=setting,
                                      allowed=f"{unset}, or engine_version {rule.first_release} or later")


def check_parallel_release(flags: EngineFlags, release: str | None, data_parallel_size: int, expert_parallel: bool) -> None:
    """Refuse data-parallel ranks run as attention data parallelism, or expert parallelism, where the planned
    ``release`` lacks their flag (``EngineFlags.absent_parallel``, the rule the search's layouts are kept by)."""
    setting = flags.absent_parallel(release, data_parallel_size, expert_parallel)
    if setting is None:
        return
    rule = flags.settings[setting]
    if setting == "enable_expert_parallel":
        check_flag_release(rule, setting, release, "off")
    first = rule.switches_first_release or rule.first_release
    raise UnsupportedSettingError(
        f"data_parallel_size {data_parallel_size}{f' with {rule.folds_with}' if rule.folds_with else ''} runs as attention "
        f"data parallelism "
        f"({' '.join(rule.switches)}), which the engine has from {first} on, and the plan is at engine_version {release}",
        field=setting, allowed=f"1, or engine_version {first} or later")
