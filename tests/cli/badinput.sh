#!/bin/sh
# Every class of bad policy input gets a clear error naming file, line and
# column, exit status 1, and is refused in well under a second.
. "$top_srcdir/tests/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# reject NAME FILE PATTERN: gpumem validate fails fast with PATTERN.
reject() {
	name=$1 file=$2 pat=$3
	start=$(date +%s%N)
	out=$("$GPUMEM" validate "$file" 2>&1); rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	is "$rc" 1 "$name: exit status 1"
	like "$out" "$pat" "$name: message"
	if [ "$ms" -lt 1000 ]; then pass "$name: refused in ${ms} ms"
	else fail "$name: took ${ms} ms"; fi
}

printf 'version: 1\nl2:\n  presisting_limit: 50%%\n' >"$t/unknown.yaml"
reject "unknown key" "$t/unknown.yaml" \
	"unknown.yaml:3:3: error: unknown key 'l2.presisting_limit' \(did you mean 'persisting_limit'\?\)"

printf 'version: 1\nmsp:\n  daemon: job\n' >"$t/unknown2.yaml"
reject "unknown section" "$t/unknown2.yaml" "unknown2.yaml:2:1: error: unknown key 'msp' \(did you mean 'mps'\?\)"

printf 'version: 1\nmps:\n  active_thread_percentage: [50]\n' >"$t/type.yaml"
reject "wrong type (list for integer)" "$t/type.yaml" \
	"type.yaml:3:29: error: mps.active_thread_percentage: expected an integer, got a list"

printf 'version: 1\nl2: 50%%\n' >"$t/type2.yaml"
reject "wrong type (scalar for section)" "$t/type2.yaml" \
	"type2.yaml:2:5: error: l2: expected a mapping of keys, got a value"

printf 'version: 1\nunified_memory:\n  read_mostly: yes\n' >"$t/bool.yaml"
reject "wrong type (yes for boolean)" "$t/bool.yaml" \
	"bool.yaml:3:16: error: unified_memory.read_mostly: expected true or false, got 'yes'"

printf 'version: 1\nmps:\n  active_thread_percentage: 101\n' >"$t/range.yaml"
reject "out of range integer" "$t/range.yaml" \
	"range.yaml:3:29: error: mps.active_thread_percentage: 101 is out of range \[1, 100\]"

printf 'version: 1\ncheck:\n  bandwidth:\n    min_fraction: 1.5\n' >"$t/range2.yaml"
reject "out of range fraction" "$t/range2.yaml" \
	"range2.yaml:4:19: error: check.bandwidth.min_fraction: 1.5 is out of range \[0, 1\]"

printf 'version: 1\nl2:\n  persisting_limit: 150%%\n' >"$t/range3.yaml"
reject "out of range percent" "$t/range3.yaml" "range3.yaml:3:21: error: l2.persisting_limit: 150 is out of range"

printf 'version: 1\nmps:\n  pinned_device_mem_limit: 40GB\n' >"$t/unit.yaml"
reject "ambiguous unit" "$t/unit.yaml" \
	"unit.yaml:3:28: error: mps.pinned_device_mem_limit: '40GB': decimal units are ambiguous: use KiB, MiB, GiB or TiB"

printf 'version: 1\nunified_memory:\n  min_bytes: 4 parsecs\n' >"$t/unit2.yaml"
reject "unknown unit" "$t/unit2.yaml" "unit2.yaml:3:14: error: unified_memory.min_bytes: '4 parsecs': unknown unit"

printf 'version: 1\nmps:\n  pinned_device_mem_limit: 99999999999999999999999\n' >"$t/ovf.yaml"
reject "integer overflow" "$t/ovf.yaml" "ovf.yaml:3:28: error: mps.pinned_device_mem_limit: .*: number is too large"

printf 'version: 1\nmps:\n  pinned_device_mem_limit: 20000000TiB\n' >"$t/ovf2.yaml"
reject "unit overflow" "$t/ovf2.yaml" "ovf2.yaml:3:28: error: .*size overflows 64 bits"

printf 'version: 1\nmps:\n  active_thread_percentage: 9223372036854775808\n' >"$t/ovf3.yaml"
reject "integer overflow (int)" "$t/ovf3.yaml" "ovf3.yaml:3:29: error: .*out of range"

printf 'version: 1\nl2:\n  reset_at_exit: true\n  reset_at_exit: false\n' >"$t/dup.yaml"
reject "duplicate key" "$t/dup.yaml" "dup.yaml:4:3: error: duplicate key 'l2.reset_at_exit' \(first at line 3\)"

printf 'version: 1\n---\nversion: 1\n' >"$t/docs.yaml"
reject "several documents" "$t/docs.yaml" "docs.yaml:2:1: error: more than one YAML document"

printf 'l2:\n  reset_at_exit: true\n' >"$t/nover.yaml"
reject "missing version" "$t/nover.yaml" "nover.yaml:1:1: error: missing required key 'version'"

printf 'version: 2\n' >"$t/ver2.yaml"
reject "unsupported version" "$t/ver2.yaml" "ver2.yaml:1:10: error: unsupported version 2: this gpumem reads version 1"

: >"$t/empty.yaml"
reject "empty file" "$t/empty.yaml" "empty.yaml:1:1: error: empty policy"

printf '# only a comment\n' >"$t/comment.yaml"
reject "comments only" "$t/comment.yaml" "comment.yaml:1:1: error: empty policy"

printf 'version: 1\nl2:\n  reset_at_exit: tru\377\n' >"$t/utf8.yaml"
reject "invalid UTF-8" "$t/utf8.yaml" "utf8.yaml:3:21: error: invalid UTF-8 byte 0xff"

printf 'version: 1\n\300\257: x\n' >"$t/overlong.yaml"
reject "overlong UTF-8" "$t/overlong.yaml" "overlong.yaml:2:1: error: invalid UTF-8 byte 0xc0"

printf 'version: 1\nl2:\n  reset_at_exit: tr\000ue\n' >"$t/nul.yaml"
reject "NUL byte" "$t/nul.yaml" "nul.yaml:3:20: error: NUL byte in file"

printf 'version: 1\nl2:\n\treset_at_exit: true\n' >"$t/tab.yaml"
reject "tab indentation" "$t/tab.yaml" "tab.yaml:3:1: error: tab character in indentation"

printf 'version: 1\nl2: {reset_at_exit: true\n' >"$t/syntax.yaml"
reject "YAML syntax error" "$t/syntax.yaml" "syntax.yaml:3:1: error: YAML syntax error"

printf 'version: 1\nl2: &a\n  reset_at_exit: true\n' >"$t/anchor.yaml"
reject "anchor" "$t/anchor.yaml" "anchor.yaml:2:5: error: YAML anchors \(&a\) are not allowed"

printf 'version: 1\nmps: *a\n' >"$t/alias.yaml"
reject "alias" "$t/alias.yaml" "alias.yaml:2:6: error: YAML aliases \(\*a\) are not allowed"

{ printf 'version: 1\na: &a ["x","x","x","x","x","x","x","x","x"]\n'
  for i in b c d e f g h i j; do printf '%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n' $i $i a a a a a a a a a; done
} >"$t/bomb.yaml"
reject "alias bomb" "$t/bomb.yaml" "bomb.yaml:2:4: error: YAML anchors \(&a\) are not allowed"

printf 'version: 1\nl2: !!python/object:os.system {}\n' >"$t/tag.yaml"
reject "YAML tag" "$t/tag.yaml" "tag.yaml:2:5: error: YAML tags \(tag:yaml.org,2002:python/object:os.system\) are not allowed"

{ printf 'version: 1\nx: '; head -c 40000 /dev/zero | tr '\0' '['; } >"$t/deep.yaml"
reject "nesting of 40,000 levels" "$t/deep.yaml" "deep.yaml:2:19: error: nesting deeper than 16 levels"

{ printf 'version: 1\nx: '; head -c 100000 /dev/zero | tr '\0' '['; } >"$t/deep100k.yaml"
reject "nesting of 100,000 levels (over the size cap)" "$t/deep100k.yaml" "deep100k.yaml: error: file is 100014 bytes, larger than the 65536-byte limit"

{ printf 'version: 1\nl2:\n  reset_at_exit: '; head -c 5000 /dev/zero | tr '\0' 'x'; printf '\n'; } >"$t/scalar.yaml"
reject "huge scalar" "$t/scalar.yaml" "scalar.yaml:3:18: error: value of 5000 bytes is longer than the 1024-byte limit"

{ printf 'version: 1\n'; head -c 10000000 /dev/zero | tr '\0' '#'; } >"$t/huge.yaml"
reject "huge file" "$t/huge.yaml" "huge.yaml: error: file is 10000011 bytes, larger than the 65536-byte limit"

reject "missing file" "$t/nope.yaml" "nope.yaml: error: cannot open: No such file or directory"
mkdir "$t/dir.yaml"
reject "directory" "$t/dir.yaml" "dir.yaml: error: is a directory, not a policy file"
mkfifo "$t/fifo.yaml"
reject "FIFO (no hang)" "$t/fifo.yaml" "fifo.yaml: error: not a regular file"
reject "device" /dev/zero "/dev/zero: error: not a regular file"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	printf 'version: 1\n' >"$t/secret.yaml"; chmod 600 "$t/secret.yaml"; chmod 755 "$t"
	out=$(runuser -u nobody -- "$GPUMEM" validate "$t/secret.yaml" 2>&1); rc=$?
	is "$rc" 1 "unreadable file: exit status 1"
	like "$out" "secret.yaml: error: cannot open: Permission denied" "unreadable file: message"
else
	skip "unreadable file: needs root to switch to an unprivileged user"
fi

# Every problem is reported, not only the first.
printf 'version: 1\nl2:\n  persisting_limit: 7 bananas\nmps:\n  active_thread_percentage: 0\n  deamon: job\n' >"$t/many.yaml"
run "$GPUMEM" validate "$t/many.yaml"
is "$(printf '%s\n' "$out" | grep -c ': error: ')" 3 "three problems, three error lines"
like "$out" "many.yaml:6:3: error: unknown key 'mps.deamon' \(did you mean 'daemon'\?\)" "the last one too"

# Several files: exit 1 if any is invalid, messages name each file.
run "$GPUMEM" validate "$top_srcdir/policies/stream.yaml" "$t/unknown.yaml"
is "$rc" 1 "one bad file among two fails validation"
unlike "$out" "stream.yaml" "the good file gets no message"
done_testing
