#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Write gpumem-report/1 files (as the plugin would) for the tests of
# `gpumem report` and for bench/report-example.png.
#
#   report-gen.sh write DIR <SPEC        one report file per R line
#   report-gen.sh synth [DAYS [SEED [END]]]
#                                        SPEC of a small cluster over DAYS
#                                        days ending at END (epoch seconds)
#
# SPEC lines are '|'-separated:
#   R|job|step|node|phase|time|status|gpus|reason|user|drained|verdict
#     status: ran, skipped, not_run, timed_out, failed; verdict: empty to
#     derive it from the GPUs (ran) or the status (others)
#   D|index|uuid|model|read|write|copy|triad|d2d|h2d|d2h|problem
#     a GPU of the R line above: CUDA ordinal, GB/s figures ('-' = not
#     measured); problem: empty, memtest:N (N mismatches) or unusable:WHY
# Verdicts follow gpumem-check: the example site's references, min_fraction
# 0.85, warn band 0.10; write has no H200 reference ("pass (no reference)");
# like gpumem-check, an unmeasured metric has threshold and floor 0.
set -eu

write_awk='
function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function qn(s) { return s == "" ? "null" : q(s) }
function rank(v) { return v == "fail" ? 0 : v == "unusable" ? 1 : v == "error" ? 2 : v == "warn" ? 3 : v == "skipped" ? 4 : 5 }
function exitof(v) { return v == "pass" ? 0 : v == "warn" ? 1 : v == "fail" ? 2 : v == "skipped" ? 3 : 4 }
function num(x) { return x == "-" || x == "" ? "null" : sprintf("%.2f", x) }
BEGIN {
	FS = "|"
	split("read write copy triad d2d h2d d2h", M, " ")
	split("4373 0 3969 4127 4294 55 55", a, " ")
	for (i = 1; i <= 7; i++) ref["NVIDIA H200", M[i]] = a[i]
	split("3010 3056 2750 2825 3000 53 55", a, " ")
	for (i = 1; i <= 7; i++) ref["NVIDIA H100 80GB HBM3", M[i]] = a[i]
	job = ""
}
# One device of gpumem-check/1; sets dv (its verdict).
function hreasons(r) { gsub(/","/, "\", \"", r); return r }
function device(line,   f, i, m, v, r, thr, flo, mv, reasons, s, unusable, mism, prob, hm) {
	split(line, f, "|")
	prob = f[12]; unusable = ""; mism = 0; reasons = ""; dv = "pass"
	if (prob ~ /^unusable:/) { unusable = substr(prob, 10); dv = "unusable"
		reasons = q("GPU unusable for the check: " unusable) }
	if (prob ~ /^memtest:/) { mism = substr(prob, 9) + 0 }
	s = "{\"index\":" f[2] ",\"name\":" q(f[4]) ",\"uuid\":" q(f[3]) \
	    ",\"pci_bus_id\":" q(sprintf("0000:%02X:00.0", 25 + 16 * f[2])) \
	    ",\"compute_capability\":\"9.0\",\"sm_count\":132,\"memory_bytes\":150754820096," \
	    "\"l2_bytes\":62914560,\"mps_client\":false,\"array_bytes\":1073741824," \
	    "\"numa\":{\"node\":" (f[2] < 2 ? 0 : 1) ",\"placed\":true,\"cuda_host_node\":" (f[2] < 2 ? 0 : 1) \
	    ",\"pinning\":\"cudaHostRegister\",\"note\":\"host buffer and thread on NUMA node " (f[2] < 2 ? 0 : 1) "\"}," \
	    "\"health\":{\"verdict\":" (unusable != "" ? "\"unusable\"" : "\"pass\"") ",\"context\":\"ok\",\"unusable\":" qn(unusable) \
	    ",\"compute_mode\":\"default\",\"nvml\":\"ok\",\"mig_mode\":false,\"mig_instance\":false," \
	    "\"ecc\":{\"enabled\":true,\"pending_enabled\":true,\"corrected_volatile\":0,\"uncorrected_volatile\":0}," \
	    "\"retired_pages\":{\"single_bit\":null,\"double_bit\":null,\"pending\":null}," \
	    "\"row_remap\":{\"correctable\":0,\"uncorrectable\":0,\"pending\":false,\"failure\":false}," \
	    "\"pcie\":{\"gen\":5,\"max_gen\":5,\"width\":16,\"max_width\":16}," \
	    "\"throttle\":{\"mask\":\"0x0\",\"reasons\":[]}},"
	if (unusable != "") s = s "\"memtest\":null,"
	else {
		s = s "\"memtest\":{\"verdict\":" (mism ? "\"fail\"" : "\"pass\"") ",\"bytes\":1073741824,\"patterns\":4," \
		    "\"mismatches\":" mism ",\"first_offset\":" (mism ? 536870968 : "null") \
		    ",\"first_address\":" (mism ? "\"0x7fe990000038\"" : "null") \
		    ",\"bad_bits\":" (mism ? "\"0x0000000000020000\"" : "null") \
		    ",\"planted_error\":false,\"seconds\":0.006412,\"traffic_gbps\":2512.3,\"error\":null},"
		if (mism) { dv = "fail"
			reasons = q("memory test: " mism " mismatch(es), first at offset 0x20000038 (address 0x7fe990000038, bits 0x20000)") }
	}
	s = s "\"metrics\":{"
	for (i = 1; i <= 7; i++) {
		m = M[i]; v = f[4 + i]; r = ref[f[4], m] + 0
		thr = r * 0.85; flo = r * 0.75
		if (v == "-" || v == "") mv = "not run"
		else if (r <= 0) mv = "pass (no reference)"
		else if (v >= thr) mv = "pass"
		else if (v >= flo) { mv = "warn"; reasons = reasons (reasons == "" ? "" : ",") q(sprintf("%s %.1f GB/s below %.1f (0.85 of %.1f)", m, v, thr, r)) }
		else { mv = "fail"; reasons = reasons (reasons == "" ? "" : ",") q(sprintf("%s %.1f GB/s below %.1f (0.75 of %.1f)", m, v, flo, r)) }
		if (mv == "fail" || (mv == "warn" && dv == "pass")) dv = mv
		hm = hm (i > 1 ? ", " : "") q(m) ": [" q(mv) ", " num(v) ", " (v == "-" ? "null" : sprintf("%.2f", v * 0.992)) \
		    ", " (r > 0 ? sprintf("%.2f", r) : "null") ", " (r > 0 ? sprintf("%.2f", mv == "not run" ? 0 : thr) : "null") \
		    ", " (r > 0 ? sprintf("%.2f", mv == "not run" ? 0 : flo) : "null") "]"
		s = s (i > 1 ? "," : "") q(m) ":{\"verdict\":" q(mv) ",\"best_gbps\":" num(v) \
		    ",\"median_gbps\":" (v == "-" ? "null" : sprintf("%.2f", v * 0.992)) ",\"repeats\":10,\"bytes\":2147483648" \
		    ",\"reference_gbps\":" (r > 0 ? sprintf("%.2f", r) : "null") ",\"mps_scale\":1.0000" \
		    ",\"threshold_gbps\":" (r > 0 ? sprintf("%.2f", mv == "not run" ? 0 : thr) : "null") \
		    ",\"warn_floor_gbps\":" (r > 0 ? sprintf("%.2f", mv == "not run" ? 0 : flo) : "null") ",\"error\":null}"
	}
	s = s "},\"l2_ab\":null,\"reference\":{\"model\":" q(f[4]) "}," \
	    "\"timings_s\":{\"init\":0.1490,\"memtest\":0.0064,\"bandwidth\":0.0460,\"host\":0.0340,\"l2_ab\":0.0000,\"nvml\":0.0040,\"total\":0.2480}," \
	    "\"verdict\":" q(dv) ",\"reasons\":[" reasons "]}"
	# The head line row, as report_head.c makes it from the above.
	hr = "{\"index\": " f[2] ", \"name\": " q(f[4]) ", \"uuid\": " q(f[3]) \
	    ", \"pci_bus_id\": " q(sprintf("0000:%02X:00.0", 25 + 16 * f[2])) ", \"verdict\": " q(dv) \
	    ", \"reasons\": [" hreasons(reasons) "], \"metrics\": {" hm "}}"
	return s
}
function flush(   name, devs, i, v, w, chk, ec, why, rows, creason) {
	if (job == "") return
	v = "pass"; devs = ""; rows = ""; creason = "null"
	for (i = 1; i <= nd; i++) {
		devs = devs (i > 1 ? "," : "") "\n  " device(D[i])
		rows = rows (i > 1 ? ", " : "") hr
		if (rank(dv) < rank(v)) v = dv
	}
	why = reason
	if (status == "ran") {
		ec = exitof(v)
		chk = "{\"schema\":\"gpumem-check/1\",\"program\":\"gpumem-check\",\"version\":\"0.1.0\"," \
		      "\"host\":" q(node) ",\"time\":" q(time) ",\"wall_s\":0.4300," \
		      "\"cuda\":{\"driver\":13000,\"runtime\":13000,\"nvml_driver\":\"580.159.04\"}," \
		      "\"settings\":{\"site\":\"/etc/slurm/gpumem.yaml\",\"min_fraction\":0.8500,\"warn_band\":0.1000," \
		      "\"mps_share_pct\":100,\"mps_share_source\":\"default\",\"quick\":false,\"memtest\":true," \
		      "\"mem_bytes\":1073741824,\"l2_ab\":false,\"plant_error\":false}," \
		      "\"devices\":[" devs "],\n \"overall\":{\"verdict\":" q(v) ",\"exit_code\":" ec ",\"reason\":null}}"
	} else if (status == "skipped") {
		v = "skipped"; ec = 3
		chk = "{\"schema\":\"gpumem-check/1\",\"program\":\"gpumem-check\",\"version\":\"0.1.0\"," \
		      "\"host\":" q(node) ",\"time\":" q(time) ",\"wall_s\":0.0100,\"devices\":[]," \
		      "\"overall\":{\"verdict\":\"skipped\",\"exit_code\":3,\"reason\":" qn(why) "}}"
		creason = qn(why)
	} else {
		v = "error"; ec = ""; chk = "null"        # as the plugin writes them
	}
	if (verdict != "") v = verdict
	name = dir "/job" job "." step "." node "." phase ".json"
	printf "{\"schema\": \"gpumem-report/1\", \"job\": %s, \"step\": %s, \"node\": %s, \"user\": %s, \"uid\": %d,", \
		job, q(step), q(node), q(user == "" ? "alice" : user), user == "bob" ? 1001 : 1000 > name
	printf " \"policy\": \"stream.yaml\", \"phase\": %s, \"time\": %s, \"gpus\": %s,", q(phase), q(time), q(gpus) > name
	printf " \"status\": %s, \"reason\": %s, \"exit_code\": %s, \"verdict\": %s, \"drained\": %s,", \
		q(status), qn(why), ec == "" ? "null" : ec, q(v), drained == "1" ? "true" : "false" > name
	# The head line ends here, as the plugin writes it (report_head.c).
	printf " \"rows\": [%s], \"check_reason\": %s,\n", rows, creason > name
	printf " \"effective\": null, \"check\": %s}\n", chk > name
	close(name)
	job = ""
}
$1 == "R" { flush(); job = $2; step = $3; node = $4; phase = $5; time = $6; status = $7
	gpus = $8; reason = $9; user = $10; drained = $11; verdict = $12; nd = 0; next }
$1 == "D" { D[++nd] = $0; next }
END { flush() }
'

synth_awk='
function iso(t,   d, s, z, era, doe, yoe, y, doy, mp, dd, m) {
	d = int(t / 86400); s = t - d * 86400
	z = d + 719468; era = int(z / 146097); doe = z - era * 146097
	yoe = int((doe - int(doe / 1460) + int(doe / 36524) - int(doe / 146096)) / 365)
	y = yoe + era * 400; doy = doe - (365 * yoe + int(yoe / 4) - int(yoe / 100))
	mp = int((5 * doy + 2) / 153); dd = doy - int((153 * mp + 2) / 5) + 1
	m = mp < 10 ? mp + 3 : mp - 9; y += (m <= 2)
	return sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, dd, int(s / 3600), int((s % 3600) / 60), s % 60)
}
function noise(p) { return 1 + (rand() * 2 - 1) * p }
function fig(x) { return sprintf("%.1f", x) }
# The GB/s of one GPU at time t, as a D line.
function dline(ci, n, g, t,   mdl, uu, f, deg, k, out, prob, frac) {
	mdl = model[n]; uu = sprintf("GPU-%02x%02x%04x-5e1c-4b7a-9f3d-%012d", n * 17, g * 29, n * 100 + g, n * 1000 + g)
	f = 0.975 + 0.015 * ((n * 7 + g * 3) % 5) / 4
	deg = 1
	if (node[n] == "gpu02" && g == 2) {
		# HBM going bad: a steady slide through the pass threshold
		frac = (t - t0) / (t1 - t0)
		deg = frac < 0.25 ? 1 : 1 - 0.42 * (frac - 0.25)
	}
	prob = ""
	if (node[n] == "gpu01" && g == 3 && !ecc_done && t > t0 + 0.55 * (t1 - t0)) { prob = "memtest:1"; ecc_done = 1 }
	if (node[n] == "gpu03" && g == 1 && !unusable_done && t > t0 + 0.4 * (t1 - t0)) {
		unusable_done = 1
		return sprintf("D|%d|%s|%s|-|-|-|-|-|-|-|unusable:%s", ci, uu, mdl, "1.9 GiB free, below the 2.1 GiB the check needs")
	}
	split(R[mdl], k, " ")
	out = sprintf("D|%d|%s|%s", ci, uu, mdl)
	out = out "|" fig(k[1] * f * noise(0.008) * (deg < 1 ? 1 - (1 - deg) * 0.8 : 1))
	out = out "|" fig(k[2] * f * noise(0.008))
	out = out "|" fig(k[3] * f * noise(0.008) * deg)
	out = out "|" fig(k[4] * f * noise(0.008) * deg)
	out = out "|" fig(k[5] * f * noise(0.008))
	out = out "|" fig(k[6] * noise(0.02) * 0.97)
	out = out "|" fig(k[7] * noise(0.02) * 0.98)
	return out "|" prob
}
BEGIN {
	srand(seed)
	t1 = end; t0 = end - days * 86400
	R["NVIDIA H200"] = "4290 4330 3955 4121 4300 55 55"
	R["NVIDIA H100 80GB HBM3"] = "2986 3059 2756 2833 2993 53.1 55.3"
	nn = split("gpu01 gpu02 gpu03 gpu04", node, " ")
	split("4 4 2 4", ngpu, " ")
	for (n = 1; n <= nn; n++) model[n] = n == 3 ? "NVIDIA H100 80GB HBM3" : "NVIDIA H200"
	split("alice bob carol dave", users, " ")
	for (n = 1; n <= nn; n++) {
		t = t0 + int(rand() * 3 * 3600)
		# gpu04 was reinstalled without gpumem-check for the last two days
		if (node[n] == "gpu04") t = t1 - 2 * 86400 + 1800
		while (t < t1) {
			k = rand() < 0.35 ? 1 : rand() < 0.6 ? 2 : ngpu[n]
			if (k > ngpu[n]) k = ngpu[n]
			first = int(rand() * (ngpu[n] - k + 1))
			gl = ""
			for (g = first; g < first + k; g++) gl = gl (gl == "" ? "" : ",") g
			job = 48000 + int((t - t0) / 60) * 4 + n
			u = users[1 + int(rand() * 4)]
			dur = 3600 + int(rand() * 8 * 3600)
			for (ph = 1; ph <= 2; ph++) {
				if (ph == 1 && rand() < 0.4) continue
				tt = ph == 1 ? t : t + dur
				if (tt > t1) continue
				phase = ph == 1 ? "before" : "after"
				if (node[n] == "gpu04") {
					print "R|" job "|0|" node[n] "|" phase "|" iso(tt) "|not_run|" gl "|gpumem-check not installed|" u "|0|"
					continue
				}
				if (node[n] == "gpu03" && !timeout_done && tt > t0 + 0.7 * (t1 - t0)) {
					timeout_done = 1
					print "R|" job "|0|" node[n] "|" phase "|" iso(tt) "|timed_out|" gl "|killed: timeout after 60 s|" u "|0|"
					continue
				}
				if (node[n] == "gpu01" && !skip_done && tt > t0 + 0.3 * (t1 - t0)) {
					skip_done = 1
					print "R|" job "|batch|" node[n] "|" phase "|" iso(tt) "|skipped||no GPU on this node|" u "|0|"
					continue
				}
				print "R|" job "|0|" node[n] "|" phase "|" iso(tt) "|ran|" gl "||" u "|0|"
				for (g = first; g < first + k; g++) print dline(g - first, n, g, tt)
			}
			t += dur + 1800 + int(rand() * 4 * 3600)
		}
	}
}
'

case "${1:-}" in
write)
	[ $# -eq 2 ] || { echo "usage: $0 write DIR <SPEC" >&2; exit 64; }
	mkdir -p "$2"
	awk -v dir="$2" "$write_awk"
	;;
synth)
	days=${2:-7} seed=${3:-42} end=${4:-1795327200}    # 2026-11-22T06:00:00Z
	awk -v days="$days" -v seed="$seed" -v end="$end" "$synth_awk" </dev/null
	;;
*)
	echo "usage: $0 write DIR <SPEC | synth [DAYS [SEED [END]]]" >&2
	exit 64
	;;
esac
