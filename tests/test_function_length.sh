#!/bin/sh
# Functions stay short: fails listing every C function in src/, tools/ and
# include/ (*.c and *.h, recursively) whose body is longer than 50 lines
# (FUNCTION_MAX_LINES), as "file:line name length", unless
# tests/function_length_allowlist.txt names it.
#
# What it counts, for this code base's style: a function's body starts with a
# line that is exactly "{" (column 0) right after its signature, and ends at the
# next line that starts with "}" (column 0). The length is the number of lines
# from that opening brace to that closing brace, both included (the signature is
# not counted). The name is the identifier before the first "(" on the last line
# before the brace that starts at column 0 with a letter or "_" and has a "("
# (so "static int\nname(void)" and signatures continued on indented lines both
# work). The reported line is that line's.
#
# Allowlist: one "path:function" a line (path from the repository root), with a
# "#" comment saying why; blank lines and lines starting with "#" are skipped.
# An allowlisted function that is no longer too long (or gone) is reported as a
# note, not a failure: remove its entry.
#
# Run: sh tests/test_function_length.sh (from anywhere). Exit 0 pass, 1 fail.
cd "$(dirname "$0")/.." || exit 1
FUNCTION_MAX_LINES=${FUNCTION_MAX_LINES:-50}
ALLOW=tests/function_length_allowlist.txt

files=$(find src tools include -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
[ -n "$files" ] || { echo "FAIL: no C sources found under src/, tools/, include/"; exit 1; }

# Every function, as "path:line name length".
# shellcheck disable=SC2086
all=$(awk '
FNR == 1 { sig = ""; sigline = 0; open = 0 }
/^[A-Za-z_][^;]*\(/ && !open { sig = $0; sigline = FNR }
/^\{[ \t]*$/ && sig != "" && !open { open = FNR; next }
/^\}/ && open {
	name = sig; sub(/[ \t]*\(.*/, "", name); sub(/.*[^A-Za-z0-9_]/, "", name)
	print FILENAME ":" sigline " " name " " (FNR - open + 1)
	open = 0; sig = ""
}
/;[ \t]*$/ && !open { sig = "" }
' $files)

[ -n "$all" ] || { echo "FAIL: found no functions at all: has the code style changed?"; exit 1; }

# The allowlist's entries, comments and blanks stripped.
entries=$( [ -f "$ALLOW" ] && sed -e 's/#.*//' -e 's/[ \t]*$//' -e 's/^[ \t]*//' -e '/^$/d' "$ALLOW")

# Long functions split into the allowed and the rest, and allowlist entries
# that no longer name a long function.
long=$(echo "$all" | awk -v max="$FUNCTION_MAX_LINES" '$3 > max')
report=$(printf '%s\n--\n%s\n' "$entries" "$long" | awk -v allow="$ALLOW" -v max="$FUNCTION_MAX_LINES" '
/^--$/ { listed = 1; next }
!listed { if ($0 != "") want[$0] = 1; next }
$0 == "" { next }
{
	path = $1; sub(/:[0-9]+$/, "", path)
	key = path ":" $2
	if (key in want) { print "allowed: " $0; seen[key] = 1 } else print "long: " $0
}
END {
	for (k in want)
		if (!(k in seen))
			print "note: " allow " lists " k ", which is not over " max " lines (or not found): remove the entry"
}')
echo "$report" | grep '^allowed: '
echo "$report" | grep '^note: '
bad=$(echo "$report" | sed -n 's/^long: //p')

count=$(echo "$all" | wc -l)
if [ -n "$bad" ]; then
	echo "FAIL: functions longer than $FUNCTION_MAX_LINES lines (file:line name length), split them into helpers:"
	echo "$bad" | sed 's/^/  /'
	exit 1
fi
echo "PASS: $count functions, none over $FUNCTION_MAX_LINES lines outside the allowlist"
