#!/bin/sh
# The GPU machine has no /run/udev, and cuFile then refuses every file handle
# ("udev property not found: ID_FS_USAGE"). On that throwaway machine only,
# write the udev entry cuFile looks up for the disk holding DIR (default
# /var/tmp). Never needed, nor run, where udev exists.
DIR=${1:-/var/tmp}
[ -d /run/udev/data ] && [ -n "$(ls /run/udev/data 2>/dev/null)" ] && exit 0
majmin=$(findmnt -no MAJ:MIN -T "$DIR" 2>/dev/null | head -1 | tr -d ' ')
fstype=$(findmnt -no FSTYPE -T "$DIR" 2>/dev/null | head -1)
[ -n "$majmin" ] || { echo "fake_udev: cannot find the device of $DIR"; exit 1; }
mkdir -p /run/udev/data
printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "${fstype:-ext4}" >"/run/udev/data/b$majmin"
echo "fake_udev: wrote /run/udev/data/b$majmin for $DIR ($fstype)"
