"""What a deployment's collectives cross, said in its assumptions — or refused when tensor or
expert parallelism (or a MoE group over the data-parallel ranks) would cross a network the catalogue
does not know."""

from __future__ import annotations

from inferplan.errors import LinkReachError
from inferplan.memory.fit import MemoryPlan
from inferplan.performance.rates import Rates
from inferplan.performance.work import ModelWork
from inferplan.units import to_gbit_per_s


def network_notes(mp: MemoryPlan, work: ModelWork, rates: Rates) -> tuple[str, ...]:
    hw, domain = mp.hardware, rates.domain_gpus
    gathered = work.tp * work.expert_data_parallel if work.expert_parallel == 1 < work.expert_data_parallel else 1
    groups = {"tensor parallelism": work.tp, "expert parallelism": work.expert_parallel,
              "the MoE layers' TP x DP group": gathered}
    spans = {name: size for name, size in groups.items() if size > domain}
    where = hw.system.name if hw.system else hw.accel.name
    link = hw.accel.scale_up.link if hw.accel.scale_up else "none"
    in_server = hw.scale_out is None and bool(hw.pcie_server_gpus)
    reach = hw.pcie_server_gpus if in_server else domain
    beyond = {name: size for name, size in spans.items() if hw.scale_out is None and size > reach}
    if beyond:
        _refuse(*next(iter(beyond.items())), where=where, reach=reach, in_server=in_server, link=link)
    notes = list(_latency_notes(work, link, rates))
    label = ", ".join(f"{name} over {size} GPUs" for name, size in spans.items()) or "pipeline stages"
    if not spans and work.tp * work.pp <= domain:
        return tuple(notes)
    out = hw.scale_out
    if out is not None:
        if hw.system is None:
            usual = f" (assumed: the usual network of {hw.accel.name} servers)"
        else:
            usual = "" if hw.system.scale_out else f" (the usual network of {hw.accel.name} servers; {where} states none)"
        notes.append(f"{label}: more than one {domain}-GPU scale-up domain; collectives between domains cross {out.link}"
                     f"{' (' + out.nic + ')' if out.nic else ''} at {to_gbit_per_s(out.bandwidth_bytes_per_s.value):.0f} Gb/s "
                     f"per GPU{usual}, {rates.scale_out_latency_s * 1e6:.0f} µs per small all-reduce (an effective "
                     "cost read from two-node runs)")
    elif in_server:
        pcie = hw.accel.scale_up.pcie_bandwidth_bytes_per_s if hw.accel.scale_up else None
        speed = "at the card's PCIe link" if pcie or link.startswith("pcie") else f"at the {link} bandwidth (optimistic)"
        notes.append(f"{label}: past the {domain}-GPU {link} domain the cards are assumed to share PCIe in one server of up "
                     f"to {hw.pcie_server_gpus}: the PCIe ring latency per step, {speed}")
        if work.tp * work.pp > hw.pcie_server_gpus:
            notes.append(f"pipeline stages span more than one {hw.pcie_server_gpus}-card server and the catalogue has no "
                         "network between servers: those hops are priced as in-server PCIe (optimistic)")
    elif rates.link_bytes_per_s:
        notes.append(f"pipeline stages span more than one {domain}-GPU scale-up domain and the catalogue has no network "
                     f"between domains for {where}: those hops are priced as the {link} link (optimistic)")
    else:
        notes.append(f"pipeline stages on separate {hw.accel.name} devices, which the catalogue knows no link between: "
                     "each hop costs its latency only (optimistic)")
    return tuple(notes)


def _refuse(name: str, size: int, *, where: str, reach: int, in_server: bool, link: str) -> None:
    tp, ep = name == "tensor parallelism", name == "expert parallelism"
    joined = ("in one PCIe server" if in_server else
              "over its scale-up link" if link != "none" else "(it has no link to another device)")
    raise LinkReachError(
        f"{name} over {size} GPUs goes past the {reach} GPU(s) {where} joins {joined}, and the catalogue has no "
        f"network between {'servers' if in_server else 'them'} to price the "
        f"{'all-reduces' if tp else 'expert all-to-alls' if ep else 'all-gathers and reduce-scatters'} "
        "on; pipeline parallelism across nodes is priced instead",
        field="tensor_parallel_size" if tp else "data_parallel_size",
        allowed=f"1..{reach} (then pipeline_parallel_size across nodes)" if tp else
        f"TP x DP <= {reach}{' with enable_expert_parallel' if ep else ''} (then pipeline_parallel_size across nodes)",
    )


def _latency_notes(work: ModelWork, link: str, rates: Rates) -> tuple[str, ...]:
    """Say where a collective's latency is an assumption rather than a measurement."""
    if work.tp == 1 and work.expert_parallel == 1 and work.expert_data_parallel == 1:
        return ()
    if link.startswith("connectx"):
        return (f"all-reduces over the {link} cable between the devices priced at the two-node scale-out latency "
                "(no measurement of this pairing in the catalogue)",)
    if not link.startswith(("nvlink", "infinity", "pcie", "none")):
        return (f"all-reduce latency over {link} assumed ({rates.link_latency_s * 1e6:.0f} µs): no published "
                "small-message measurement found",)
    return ()
