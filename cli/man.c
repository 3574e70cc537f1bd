// SPDX-License-Identifier: MIT
/* xdpkv(8) in roff, written from the command list and the option tables that
 * --help prints: one source for both.  'xdpkv --man' (hidden) prints it; the
 * build writes build/xdpkv.8 with it (cli/CMakeLists.txt). */
#include <string.h>
#include "cli.h"

/* Text for roff: backslashes escaped, '-' as \-, and a line that would read
 * as a request ('.' or '\'' first) guarded with \&. */
static void roff_text(FILE *f, const char *s, size_t n)
{
	bool bol = true;
	for (size_t i = 0; i < n && s[i]; i++) {
		char c = s[i];
		if (bol && (c == '.' || c == '\''))
			fputs("\\&", f);
		unsigned char u = (unsigned char)c;
		if (u >= 0xc0 && u < 0xf8) { /* UTF-8: \[uXXXX], so groff needs no preconv */
			int more = u >= 0xf0 ? 3 : u >= 0xe0 ? 2 : 1;
			unsigned cp = u & (0x3f >> more);
			while (more-- && i + 1 < n && ((unsigned char)s[i + 1] & 0xc0) == 0x80)
				cp = cp << 6 | ((unsigned char)s[++i] & 0x3f);
			fprintf(f, "\\[u%04X]", cp);
		} else if (u >= 0x80) {
			fputc('?', f); /* a stray continuation byte */
		} else if (c == '\\')
			fputs("\\e", f);
		else if (c == '-')
			fputs("\\-", f);
		else
			fputc(c, f);
		bol = c == '\n';
	}
}

static void roff_str(FILE *f, const char *s)
{
	roff_text(f, s, strlen(s));
}

/* A doc text: a blank line starts a new paragraph; from a line starting
 * "Example:" to the paragraph's end, lines are kept as they are (commands
 * stay whole); another indented line keeps its own line. */
static void roff_doc(FILE *f, const char *doc)
{
	const char *l = doc;
	bool nofill = false;
	fputs(".PP\n", f);
	while (*l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (!n) {
			fputs(nofill ? ".fi\n.PP\n" : ".PP\n", f);
			nofill = false;
		} else {
			if (!nofill && !strncmp(l, "Example:", 8))
				fputs(".nf\n", f), nofill = true;
			else if (!nofill && l[0] == ' ')
				fputs(".br\n", f);
			roff_text(f, l, n);
			fputc('\n', f);
		}
		l += n + (e ? 1 : 0);
	}
	if (nofill)
		fputs(".fi\n", f);
}

static void roff_opt(FILE *f, const struct xo *o)
{
	char form[64];
	xo_opt_form(o, form, sizeof(form));
	fputs(".TP\n.B ", f);
	roff_str(f, form);
	fputc('\n', f);
	roff_str(f, o->help);
	xo_opt_values(f, o); /* "(a|b)" and "[1..10]": nothing roff reads specially */
	fputc('\n', f);
}

int xo_print_man(FILE *f)
{
	fprintf(f, ".\\\" xdpkv(8), written by 'xdpkv --man' from the tables behind --help.\n");
	fprintf(f, ".TH XDPKV 8 \"\" \"xdpkv %s\" \"System Administration\"\n", XKV_VERSION);
	fputs(".SH NAME\nxdpkv \\- a memcached\\-compatible key\\-value store in XDP\n", f);
	fputs(".SH SYNOPSIS\n.B xdpkv\n[\\fIglobal options\\fR] \\fICOMMAND\\fR [\\fIarguments\\fR] "
	      "[\\fIoptions\\fR]\n", f);
	fputs(".SH DESCRIPTION\n", f);
	roff_str(f, xo_about);
	fputs("\n.PP\nEvery command answers \\fB\\-\\-help\\fR with the text below.\n", f);
	fputs(".SH GLOBAL OPTIONS\nBefore or after the command.\n", f);
	for (const struct xo *o = global_table; o->name; o++)
		roff_opt(f, o);
	fputs(".SH COMMANDS\n", f);
	for (int i = 0; commands[i]; i++) {
		const struct cmd *c = commands[i];
		bool any_pos = false, any_opt = false;
		fputs(".SS \"", f);
		fprintf(f, "%s", c->name);
		fputs("\"\n.B xdpkv ", f);
		fprintf(f, "%s\n", c->name);
		/* the synopsis may span lines (indented to follow "Usage: xdpkv NAME") */
		for (const char *l = c->synopsis; *l;) {
			const char *e = strchr(l, '\n');
			size_t n = e ? (size_t)(e - l) : strlen(l);
			while (n && *l == ' ')
				l++, n--;
			roff_text(f, l, n);
			fputs(e ? "\n.br\n" : "\n", f);
			l += n + (e ? 1 : 0);
		}
		fputs(".PP\n", f);
		roff_str(f, c->summary);
		fputc('\n', f);
		if (c->doc)
			roff_doc(f, c->doc);
		for (const struct xo *o = c->opts; o->name; o++)
			any_pos |= !!(o->flags & XO_POS), any_opt |= !(o->flags & XO_POS);
		if (any_pos) {
			fputs(".PP\nArguments:\n.RS\n", f);
			for (const struct xo *o = c->opts; o->name; o++)
				if (o->flags & XO_POS)
					roff_opt(f, o);
			fputs(".RE\n", f);
		}
		if (any_opt) {
			fputs(".PP\nOptions:\n.RS\n", f);
			for (const struct xo *o = c->opts; o->name; o++)
				if (!(o->flags & XO_POS))
					roff_opt(f, o);
			fputs(".RE\n", f);
		}
	}
	fputs(".SH EXIT STATUS\n0 ok, 1 not found / nothing to do, 2 usage error, 3 system error.\n", f);
	fputs(".SH FILES\n"
	      ".TP\n.I /sys/fs/bpf/xdpkv/IFACE\nthe pinned maps and program of an attached interface\n"
	      ".TP\n.I /etc/xdpkv/IFACE.conf\nthe settings of the service xdpkv@IFACE (systemd)\n"
	      ".TP\n.I /var/lib/xdpkv/IFACE.snap\nthe service's snapshot, restored when it starts\n", f);
	fputs(".SH SEE ALSO\n.BR systemctl (1),\n.BR memcached (1),\n.BR bpftool (8).\n"
	      "The documentation in /usr/share/doc/xdpkv: cli.md, install.md, security.md, "
	      "snapshots.md.\n", f);
	return ferror(f) ? EXIT_SYS : EXIT_OK;
}
