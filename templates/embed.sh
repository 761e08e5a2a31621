#!/bin/sh
# embed.sh FILE...: prints a C source that embeds the given template files, so
# that cellc needs no data files at run time.  emit_template("model.c.in")
# returns the text of templates/model.c.in.  Bytes are written as hex
# initialisers (od), which survive any character in the templates.
set -e
echo '/* generated from templates/ by templates/embed.sh -- do not edit */'
echo '#include <string.h>'
echo '#include "emit.h"'
i=0
for f in "$@"; do
	echo "static const unsigned char tpl_$i[] = { /* $(basename "$f") */"
	od -An -v -tx1 "$f" | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g' -e 's/^/\t/'
	echo '	0 };'
	i=$((i + 1))
done
echo 'static const struct { const char *name, *text; } tpls[] = {'
i=0
for f in "$@"; do
	echo "	{\"$(basename "$f")\", (const char *)tpl_$i},"
	i=$((i + 1))
done
echo '	{NULL, NULL}'
echo '};'
cat <<'END'
const char *emit_template(const char *name)
{
	for (int i = 0; tpls[i].name; i++)
		if (strcmp(tpls[i].name, name) == 0)
			return tpls[i].text;
	return NULL;
}
END
