#!/usr/bin/env python3
"""Write benchmarks/kube-proxy.md and .json from tests/vm/bench-kube-proxy.sh's
results (one JSON object per tool and N, a line each).

    bench-kube-proxy-report.py RESULTS OUT-PREFIX HOST-CPUS

Ratios compare the two tools of one VM run: kube-proxy's time over
svcnet's (higher is better for svcnet), svcnet's RSS over kube-proxy's
(lower is better). The goals are the ones issue 13 sets.

Latency percentiles are taken over every update tried: one not seen in the
kernel within the guest's timeout counts as longer than that timeout, so a
percentile that falls on one is shown as "> 60 s" and its ratio as a lower
bound.
"""

import json
import os
import sys
from datetime import date

GOALS = [
    ("complete table at 5,000 Services", "completeSeconds", 5000, ">= 10x sooner"),
    ("default/kubernetes programmed", "kubernetesSeconds", None,
     "within 1 s of the first list at every N; the time from the process's start beside it"),
    ("p99 network programming latency", "latencyP99Seconds", None, "<= 1/5 of kube-proxy's"),
    ("maximum RSS", "maxRssKiB", None, "no higher than kube-proxy's"),
]


def ratio(a, b):
    if a is None or b is None or b == 0 or isinstance(b, AtLeast):
        return None
    r = a / b
    return AtLeast(r) if isinstance(a, AtLeast) else r


class AtLeast(float):
    """A figure known only from below: an update that timed out."""


def percentile(run, q):
    """The q-th latency over every update tried, the missed ones counted as
    longer than the timeout (an AtLeast); None when none was tried or the
    run gave no list of latencies."""
    if not run or "latenciesSeconds" not in run or not run.get("updatesTried"):
        return run.get("latencyP50Seconds" if q == 0.5 else "latencyP99Seconds") if run else None
    timed = sorted(run["latenciesSeconds"])
    tried = run["updatesTried"]
    rank = max(1, -(-int(tried * q * 1000) // 1000))
    if rank <= len(timed):
        return timed[rank - 1]
    return AtLeast(run["updateTimeoutSeconds"])


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    if isinstance(v, AtLeast):
        return f"> {float(v):.0f}{unit}"
    if isinstance(v, float):
        return f"{v:.2f}{unit}"
    return f"{v}{unit}"


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def nftables_section(runs):
    """The rules beside IPVS (issue 14): the agent's nf_tables transactions
    from its log, beside its IPVS syncs, and kube-proxy's own ipsets and
    iptables rules, when they were complete, restored from empty in the
    same VM."""
    lines = [
        "## The rules beside IPVS: nftables and iptables (issue 14)",
        "",
        "ipvs-agent's `table inet svcnet` is one nf_tables transaction after the first full sync (from empty: "
        "every set element), then one after each sync that changes it (an endpoint change on another node changes "
        "no element, and sends nothing). Its share is the transaction's time over the transaction and the IPVS "
        "syncs before it (`duration_ms` of the agent's log lines); its time from start is the log line's, placed on the "
        "guest's uptime scale (the wall clock's second edge against the uptime, read once). kube-proxy writes its ipsets and iptables rules after its IPVS table, in the same sync; they "
        "count as complete once `KUBE-CLUSTER-IP` holds every ClusterIP and `KUBE-SERVICES` matches it (polled "
        "every second, for at most the guest's timeout after the IPVS table); then they are saved (`ipset save`, "
        "`iptables-save`, `ip6tables-save`) and restored from empty into a fresh namespace of the same VM "
        "(`ipset restore`, `iptables-restore`, `ip6tables-restore`), timed: what kube-proxy's sync hands the "
        "kernel, without kube-proxy around it.",
        "",
        "| N | agent: table inet svcnet from empty | agent: its IPVS syncs until then | nftables share | "
        "agent: per endpoint change, nftables / IPVS sync (medians) | start to the rules beside IPVS: agent / kube-proxy | "
        "kube-proxy: its ipsets and iptables rules restored from empty |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        kp, sv = run["kubeProxy"] or {}, run["svcnet"] or {}
        first, syncs = sv.get("nftFromEmptyMs"), sv.get("syncsFromEmptyMs")
        share = f"{100 * first / (first + syncs):.0f} %" if first is not None and syncs else "n/a"
        nft_upd, sync_upd = median(sv.get("nftAfterUpdatesMs") or []), median(sv.get("syncsAfterUpdatesMs") or [])
        restore, kp_complete = kp.get("rulesRestoreSeconds"), kp.get("rulesCompleteSeconds")
        if kp_complete is None and kp:
            # A save of rules kube-proxy had not finished is no figure.
            restore = kp["rulesRestoreSeconds"] = None
        if not kp:
            restored, kp_at = "not run", "not run"
        elif kp_complete is None:
            restored = (f"not measured: incomplete after the timeout ({kp.get('ipsetEntries', 'n/a')} ipset entries, "
                        f"{kp.get('iptablesRules', 'n/a')} rules then)")
            kp_at = "not complete"
        else:
            restored = (f"{fmt(restore, ' s')} ({kp.get('ipsetEntries', 'n/a')} ipset entries, "
                        f"{kp.get('iptablesRules', 'n/a')} rules)")
            kp_at = fmt(kp_complete, " s")
        lines.append(
            f"| {run['services']:,} | {fmt(first, ' ms')} | {fmt(syncs, ' ms')} | {share} | "
            f"{fmt(nft_upd, ' ms')} / {fmt(sync_upd, ' ms')} | {fmt(sv.get('rulesCompleteSeconds'), ' s')} / {kp_at} | "
            f"{restored} |"
        )
        run["nftables"] = {"shareFromEmpty": first / (first + syncs) if first is not None and syncs else None,
                           "nftPerUpdateMedianMs": nft_upd, "syncPerUpdateMedianMs": sync_upd,
                           "svcnetRulesCompleteSeconds": sv.get("rulesCompleteSeconds"),
                           "kubeProxyRulesCompleteSeconds": kp_complete,
                           "kubeProxyRulesRestoreSeconds": restore}
    lines.append("")
    return lines


AGENT_MD_BEGIN = "<!-- nftables: written by make bench-vs-kube-proxy (tests/vm/bench-kube-proxy-report.py) -->"
AGENT_MD_END = "<!-- /nftables -->"


def put_in_agent_md(path, section):
    """The nftables section in benchmarks/agent.md too (its own marked
    block, which tests/vm/bench-host.sh keeps when it rewrites the rest)."""
    block = "\n".join([AGENT_MD_BEGIN, "", f"From `make bench-vs-kube-proxy` on {date.today().isoformat()} "
                       "(API mode, beside the real kube-proxy; details in [kube-proxy.md](kube-proxy.md)).", ""]
                      + section + [AGENT_MD_END]) + "\n"
    text = open(path).read() if os.path.exists(path) else ""
    if AGENT_MD_BEGIN in text and AGENT_MD_END in text:
        head, rest = text.split(AGENT_MD_BEGIN, 1)
        text = head + block + rest.split(AGENT_MD_END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(text)


# What the report calls each tool of the results.
TOOL_NAMES = {"kube-proxy": "the real kube-proxy v1.37.2", "svcnet": "ipvs-agent"}


def main():
    results_path, prefix, cpus = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = [json.loads(line) for line in open(results_path) if line.strip()]
    by_n = {}
    for r in rows:
        by_n.setdefault(r["services"], {})[r["tool"]] = r
    runs = []
    tools = sorted({r["tool"] for r in rows})
    alone = tools[0] if len(tools) == 1 else None
    lines = [
        "# kube-proxy (IPVS mode) against ipvs-agent (API mode)",
        "",
    ]
    if alone:
        lines += [
            f"**A run of {alone} alone** (`SVCNET_BENCH_TOOLS={alone}`): no figures of the other tool, so no "
            "ratios, and the goals that compare the two are not judged here; the comparison is in "
            "[kube-proxy.md](kube-proxy.md).",
            "",
        ]
    lines += [
        f"Written by `make bench-vs-kube-proxy` (tests/vm/bench-kube-proxy.sh) on {date.today().isoformat()}, "
        f"on a {cpus}-core host: "
        + (f"{TOOL_NAMES[alone]} alone, in a fresh network namespace of a QEMU kernel (software emulation, "
           "2 vCPUs), following a real kube-apiserver v1.37.2 holding N Services x 10 endpoints. Absolute times "
           "are those of an emulated CPU."
           if alone else
           "the real kube-proxy v1.37.2 and ipvs-agent, one after the other, each in a fresh network namespace of "
           "the same QEMU kernel (software emulation, 2 vCPUs), both following the same real kube-apiserver "
           "v1.37.2 holding N Services x 10 endpoints. Absolute times are those of an emulated CPU; compare the "
           "ratios, measured in the same run."),
        "",
        "How each figure is taken (tests/vm/guest/bench-kube-proxy.sh): the process is started, the table is "
        "polled every 0.1 s until `default/kubernetes` (10.96.0.1:443) is there, then every 0.2 s until every "
        "virtual and real server is (counted in /proc/net/ip_vs with grep, the time taken when the reading that "
        "saw it complete ended; confirmed with `ipvsadm-save`; the whole table is read only once a sample of eight "
        "Services, the last four in the apiserver's order of names and four spread over it, has its real servers "
        "by `ipvsadm -Ln -t`, so that its readings, 0.2 to 0.4 s of the emulated CPU each at 5,000 Services, "
        "neither slow the tool under test nor fall just before the table is complete); the agent's "
        "time from its first list to `default/kubernetes` is read from its log, from the line that starts its read "
        "of `default/kubernetes` on its own (its first request for the lists) to the end of the sync that "
        "programmed it (issue 13 asks for it within one second of the first list); a sync with no change is the growth of `kubeproxy_sync_proxy_rules_duration_seconds`'s sum "
        "over that of its count across the next periodic sync; the updates are one EndpointSlice PATCH a second "
        "(plain HTTP through `kubectl proxy` on the host), sent at that pace whether or not the earlier ones are "
        "in, and each is timed on its own from just before its request until `ipvsadm -Ln -t` shows its new real "
        "server (every update not yet seen is looked for every 20 ms, so figures under about 50 ms are bounded "
        "by the probe); "
        "CPU is user + system seconds of the process over its whole run, RSS its peak (VmHWM). "
        "Each programs the rules beside IPVS too: kube-proxy its iptables rules and ipsets, ipvs-agent its "
        "nftables table (`table inet svcnet`, the default).",
        "",
    ]
    for n in sorted(by_n):
        kp, sv = by_n[n].get("kube-proxy"), by_n[n].get("svcnet")
        lines += [f"## {n:,} Services x 10 endpoints", ""]
        lines += ["| | kube-proxy | ipvs-agent | kube-proxy / ipvs-agent |", "|---|---:|---:|---:|"]
        run = {"services": n, "kubeProxy": kp, "svcnet": sv, "ratios": {}}
        for label, key, unit in [
            ("start to `default/kubernetes`", "kubernetesSeconds", " s"),
            ("first list to `default/kubernetes` (the agent's log)", "kubernetesAfterFirstListSeconds", " s"),
            ("start to the first log line (the agent's own start)", "startToFirstLogLineSeconds", " s"),
            ("start to the complete table", "completeSeconds", " s"),
            ("one sync with no change", "idleSyncSeconds", " s"),
            ("programming latency p50", "latencyP50Seconds", " s"),
            ("programming latency p99", "latencyP99Seconds", " s"),
            ("CPU seconds", "cpuSeconds", " s"),
            ("maximum RSS", "maxRssKiB", " KiB"),
        ]:
            if key in ("latencyP50Seconds", "latencyP99Seconds"):
                q = 0.5 if key == "latencyP50Seconds" else 0.99
                a, b = percentile(kp, q), percentile(sv, q)
            else:
                a = kp.get(key) if kp else None
                b = sv.get(key) if sv else None
            r = ratio(a, b)
            run["ratios"][key] = r
            if isinstance(r, AtLeast):
                run["ratios"][key + "AtLeast"] = True
            lines.append(f"| {label} | {fmt(a, unit)} | {fmt(b, unit)} | {fmt(r, 'x')} |")
        timed = [f"{t['tool']} {t['updates']} of {t.get('updatesTried', t['updates'])}" for t in (kp, sv) if t]
        lines += [
            "",
            f"Updates seen in the kernel within 60 s: {', '.join(timed)}. The others count as longer than "
            "60 s in the percentiles, so a percentile that falls on one reads \"> 60 s\" and its ratio is a "
            "lower bound.",
            "",
        ]
        runs.append(run)
    nft = nftables_section(runs)
    lines += nft
    lines += ["## Goals (issue 13)", ""]
    for label, key, n_only, goal in GOALS:
        verdicts = []
        for run in runs:
            if n_only and run["services"] != n_only:
                continue
            kp, sv = run["kubeProxy"] or {}, run["svcnet"] or {}
            r = run["ratios"].get(key)
            # The kubernetes goal is the agent's alone, so a run of svcnet
            # alone judges it; every other goal compares the two tools.
            if alone and not (alone == "svcnet" and key == "kubernetesSeconds"):
                verdicts.append(f"N={run['services']:,}: not judged ({alone} alone)")
                continue
            if key == "completeSeconds":
                ok = r is not None and r >= 10
            elif key == "kubernetesSeconds":
                after_list = sv.get("kubernetesAfterFirstListSeconds")
                ok = after_list is not None and after_list <= 1.0
                verdicts.append(f"N={run['services']:,}: {'met' if ok else 'NOT met'} "
                                f"({fmt(after_list, ' s')} after the first list, {fmt(sv.get(key), ' s')} after start)")
                continue
            elif key == "latencyP99Seconds":
                ok = r is not None and r >= 5
            else:
                ok = r is not None and r >= 1
            verdicts.append(f"N={run['services']:,}: {'met' if ok else 'NOT met'}")
        lines.append(f"- {label} ({goal}): {', '.join(verdicts) if verdicts else 'not measured'}")
    lines.append("")
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(lines))
    if prefix.endswith("benchmarks/kube-proxy"):
        put_in_agent_md(os.path.join(os.path.dirname(prefix), "agent.md"), nft)
    with open(prefix + ".json", "w") as f:
        json.dump({"date": date.today().isoformat(), "hostCpus": int(cpus), "runs": runs}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
