# SPDX-License-Identifier: GPL-2.0-or-later
# Bad policies, one per class of bad input, shared by the CLI tests and the
# real-Slurm tests.  Source it, then: bad_policies DIR writes the files into
# DIR and prints one line per case: NAME<TAB>FILE<TAB>PATTERN (grep -E) that
# the error message must match.
case_() { printf '%s\t%s\t%s\n' "$1" "$2" "$3"; }

bad_policies() {
dir=$1
	printf 'version: 1\nl2:\n  presisting_limit: 50%%\n' >"$dir/unknown.yaml"
	case_ "unknown key" "$dir/unknown.yaml" \
		"unknown.yaml:3:3: error: unknown key 'l2.presisting_limit' \(did you mean 'persisting_limit'\?\)"

	printf 'version: 1\nmsp:\n  daemon: job\n' >"$dir/unknown2.yaml"
	case_ "unknown section" "$dir/unknown2.yaml" "unknown2.yaml:2:1: error: unknown key 'msp' \(did you mean 'mps'\?\)"

	printf 'version: 1\nmps:\n  active_thread_percentage: [50]\n' >"$dir/type.yaml"
	case_ "wrong type (list for integer)" "$dir/type.yaml" \
		"type.yaml:3:29: error: mps.active_thread_percentage: expected an integer, got a list"

	printf 'version: 1\nl2: 50%%\n' >"$dir/type2.yaml"
	case_ "wrong type (scalar for section)" "$dir/type2.yaml" \
		"type2.yaml:2:5: error: l2: expected a mapping of keys, got a value"

	printf 'version: 1\nunified_memory:\n  read_mostly: yes\n' >"$dir/bool.yaml"
	case_ "wrong type (yes for boolean)" "$dir/bool.yaml" \
		"bool.yaml:3:16: error: unified_memory.read_mostly: expected true or false, got 'yes'"

	printf 'version: 1\nmps:\n  active_thread_percentage: 101\n' >"$dir/range.yaml"
	case_ "out of range integer" "$dir/range.yaml" \
		"range.yaml:3:29: error: mps.active_thread_percentage: 101 is out of range \[1, 100\]"

	printf 'version: 1\ncheck:\n  bandwidth:\n    min_fraction: 1.5\n' >"$dir/range2.yaml"
	case_ "out of range fraction" "$dir/range2.yaml" \
		"range2.yaml:4:19: error: check.bandwidth.min_fraction: 1.5 is out of range \[0, 1\]"

	printf 'version: 1\nl2:\n  persisting_limit: 150%%\n' >"$dir/range3.yaml"
	case_ "out of range percent" "$dir/range3.yaml" "range3.yaml:3:21: error: l2.persisting_limit: 150 is out of range"

	printf 'version: 1\nmps:\n  pinned_device_mem_limit: 40GB\n' >"$dir/unit.yaml"
	case_ "ambiguous unit" "$dir/unit.yaml" \
		"unit.yaml:3:28: error: mps.pinned_device_mem_limit: '40GB': decimal units are ambiguous: use KiB, MiB, GiB or TiB"

	printf 'version: 1\nunified_memory:\n  min_bytes: 4 parsecs\n' >"$dir/unit2.yaml"
	case_ "unknown unit" "$dir/unit2.yaml" "unit2.yaml:3:14: error: unified_memory.min_bytes: '4 parsecs': unknown unit"

	printf 'version: 1\nmps:\n  pinned_device_mem_limit: 99999999999999999999999\n' >"$dir/ovf.yaml"
	case_ "integer overflow" "$dir/ovf.yaml" "ovf.yaml:3:28: error: mps.pinned_device_mem_limit: .*: number is too large"

	printf 'version: 1\nmps:\n  pinned_device_mem_limit: 20000000TiB\n' >"$dir/ovf2.yaml"
	case_ "unit overflow" "$dir/ovf2.yaml" "ovf2.yaml:3:28: error: .*size overflows 64 bits"

	printf 'version: 1\nmps:\n  active_thread_percentage: 9223372036854775808\n' >"$dir/ovf3.yaml"
	case_ "integer overflow (int)" "$dir/ovf3.yaml" "ovf3.yaml:3:29: error: .*out of range"

	printf 'version: 1\nl2:\n  reset_at_exit: true\n  reset_at_exit: false\n' >"$dir/dup.yaml"
	case_ "duplicate key" "$dir/dup.yaml" "dup.yaml:4:3: error: duplicate key 'l2.reset_at_exit' \(first at line 3\)"

	printf 'version: 1\n---\nversion: 1\n' >"$dir/docs.yaml"
	case_ "several documents" "$dir/docs.yaml" "docs.yaml:2:1: error: more than one YAML document"

	printf 'l2:\n  reset_at_exit: true\n' >"$dir/nover.yaml"
	case_ "missing version" "$dir/nover.yaml" "nover.yaml:1:1: error: missing required key 'version'"

	printf 'version: 2\n' >"$dir/ver2.yaml"
	case_ "unsupported version" "$dir/ver2.yaml" "ver2.yaml:1:10: error: unsupported version 2: this gpumem reads version 1"

	: >"$dir/empty.yaml"
	case_ "empty file" "$dir/empty.yaml" "empty.yaml:1:1: error: empty policy"

	printf '# only a comment\n' >"$dir/comment.yaml"
	case_ "comments only" "$dir/comment.yaml" "comment.yaml:1:1: error: empty policy"

	printf 'version: 1\nl2:\n  reset_at_exit: tru\377\n' >"$dir/utf8.yaml"
	case_ "invalid UTF-8" "$dir/utf8.yaml" "utf8.yaml:3:21: error: invalid UTF-8 byte 0xff"

	printf 'version: 1\n\300\257: x\n' >"$dir/overlong.yaml"
	case_ "overlong UTF-8" "$dir/overlong.yaml" "overlong.yaml:2:1: error: invalid UTF-8 byte 0xc0"

	printf 'version: 1\nl2:\n  reset_at_exit: tr\000ue\n' >"$dir/nul.yaml"
	case_ "NUL byte" "$dir/nul.yaml" "nul.yaml:3:20: error: NUL byte in file"

	printf 'version: 1\nl2:\n\treset_at_exit: true\n' >"$dir/tab.yaml"
	case_ "tab indentation" "$dir/tab.yaml" "tab.yaml:3:1: error: tab character in indentation"

	printf 'version: 1\nl2: {reset_at_exit: true\n' >"$dir/syntax.yaml"
	case_ "YAML syntax error" "$dir/syntax.yaml" "syntax.yaml:3:1: error: YAML syntax error"

	printf 'version: 1\nl2: &a\n  reset_at_exit: true\n' >"$dir/anchor.yaml"
	case_ "anchor" "$dir/anchor.yaml" "anchor.yaml:2:5: error: YAML anchors \(&a\) are not allowed"

	printf 'version: 1\nmps: *a\n' >"$dir/alias.yaml"
	case_ "alias" "$dir/alias.yaml" "alias.yaml:2:6: error: YAML aliases \(\*a\) are not allowed"

	{ printf 'version: 1\na: &a ["x","x","x","x","x","x","x","x","x"]\n'
	  for i in b c d e f g h i j; do printf '%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n' $i $i a a a a a a a a a; done
	} >"$dir/bomb.yaml"
	case_ "alias bomb" "$dir/bomb.yaml" "bomb.yaml:2:4: error: YAML anchors \(&a\) are not allowed"

	printf 'version: 1\nl2: !!python/object:os.system {}\n' >"$dir/tag.yaml"
	case_ "YAML tag" "$dir/tag.yaml" "tag.yaml:2:5: error: YAML tags \(tag:yaml.org,2002:python/object:os.system\) are not allowed"

	{ printf 'version: 1\nx: '; head -c 40000 /dev/zero | tr '\0' '['; } >"$dir/deep.yaml"
	case_ "nesting of 40,000 levels" "$dir/deep.yaml" "deep.yaml:2:19: error: nesting deeper than 16 levels"

	{ printf 'version: 1\nx: '; head -c 100000 /dev/zero | tr '\0' '['; } >"$dir/deep100k.yaml"
	case_ "nesting of 100,000 levels (over the size cap)" "$dir/deep100k.yaml" "deep100k.yaml: error: file is 100014 bytes, larger than the 65536-byte limit"

	{ printf 'version: 1\nl2:\n  reset_at_exit: '; head -c 5000 /dev/zero | tr '\0' 'x'; printf '\n'; } >"$dir/scalar.yaml"
	case_ "huge scalar" "$dir/scalar.yaml" "scalar.yaml:3:18: error: value of 5000 bytes is longer than the 1024-byte limit"

	{ printf 'version: 1\n'; head -c 10000000 /dev/zero | tr '\0' '#'; } >"$dir/huge.yaml"
	case_ "huge file" "$dir/huge.yaml" "huge.yaml: error: file is 10000011 bytes, larger than the 65536-byte limit"


	case_ "missing file" "$dir/nope.yaml" "nope.yaml: error: cannot open: No such file or directory"
	mkdir -p "$dir/dir.yaml"
	case_ "directory" "$dir/dir.yaml" "dir.yaml: error: is a directory, not a policy file"
	[ -p "$dir/fifo.yaml" ] || mkfifo "$dir/fifo.yaml"
	case_ "FIFO (no hang)" "$dir/fifo.yaml" "fifo.yaml: error: not a regular file"
	case_ "device" /dev/zero "/dev/zero: error: not a regular file"
}
