# size_report.awk: the report of `make size TARGET=...` (a target with a
# board): the flash and RAM that model MODEL takes, from two files,
#   NAME_size.map  the GNU ld link map of the size probe (size_probe.c):
#                  every input section the link kept, its size and the
#                  object or archive member it came from;
#   NAME_size.out  what the probe printed on the emulator: arena, io,
#                  stack (measured), stack_size, status.
# Each kept section is counted in its output section's column (.text: code;
# .rodata and .ARM.exidx: constants, the embedded weights among them;
# .data; .bss) and in the row of where it came from: the model (libNAME.a),
# libcellrt, the C library (newlib's libc and libm, libgcc), the arena (the
# probe's .bss.arena), the rest (the board's startup and the probe).  Flash
# is .text, .rodata, .ARM.exidx and the initial values of .data (alignment
# included: the output sections' sizes); RAM is .data, .bss (the arena in
# it) and the stack the model's calls took.  Exits 1 when the probe's run
# failed or the link holds malloc or _sbrk (the model or libcellrt
# allocating).  Variables: model, target, board (awk -v).

function hex(s,    v, i) {
	s = tolower(substr(s, 3))
	v = 0
	for (i = 1; i <= length(s); i++)
		v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v
}

function part(sec, file) {
	if (file ~ ("(^|/)lib" model "\\.a\\(" model "\\.o\\)"))
		return "model"
	if (index(file, "libcellrt.a("))
		return "libcellrt"
	if (file ~ /\/lib(c|m|g|gcc|c_nano|m_nano|nosys)\.a\(/)
		return "libc"
	if (sec == ".bss.arena")
		return "arena"
	return "board"
}

function column(out) {
	if (out == ".text")
		return "text"
	if (out == ".rodata" || out == ".ARM.exidx")
		return "rodata"
	if (out == ".data" || out == ".bss")
		return substr(out, 2)
	return ""
}

function add(sec, size, file,    c) {
	c = column(out)
	if (c != "")
		bytes[part(sec, file), c] += size
}

FNR == 1 { nfile++ }

nfile == 1 && /^Linker script and memory map/ { inmap = 1; next }

nfile == 1 && inmap {
	if ($0 ~ /^\.[^ ]/) {           # an output section: .text 0x0 0x7184
		out = $1
		if (NF >= 3 && $3 ~ /^0x/)
			outsize[out] = hex($3)
		pending = ""
		next
	}
	if (NF == 2 && $1 ~ /^0x/ && ($2 == "malloc" || $2 == "_malloc_r" || $2 == "_sbrk"))
		heap = heap " " $2
	if ($0 ~ /^ [.A-Za-z]/ && $1 != "*fill*") {     # an input section
		if (NF >= 4 && $2 ~ /^0x/ && $3 ~ /^0x/)
			add($1, hex($3), $4)
		else if (NF == 1)
			pending = $1            # its address, size and file on the next line
		next
	}
	if (pending != "" && NF >= 3 && $1 ~ /^0x/ && $2 ~ /^0x/) {
		add(pending, hex($2), $3)
		pending = ""
	}
	next
}

nfile == 2 { probe[$1] = $2; if ($1 == "status") { $1 = ""; $2 = ""; status_text = substr($0, 3) } }

END {
	split("model libcellrt libc arena board", parts, " ")
	names["model"] = "model (" model ".o)"
	names["libcellrt"] = "libcellrt"
	names["libc"] = "C library"
	names["arena"] = "arena (" model "_ARENA_BYTES)"
	names["board"] = "startup and probe"
	printf "%s on %s (board %s): bytes\n", model, target, board
	printf "  %-28s %9s %9s %9s %9s\n", "", "text", "rodata", "data", "bss"
	for (i = 1; i <= 5; i++) {
		p = parts[i]
		printf "  %-28s %9d %9d %9d %9d\n", names[p], bytes[p, "text"], bytes[p, "rodata"], bytes[p, "data"],
			bytes[p, "bss"]
	}
	flash = outsize[".text"] + outsize[".rodata"] + outsize[".ARM.exidx"] + outsize[".data"]
	ram = outsize[".data"] + outsize[".bss"] + probe["stack"]
	printf "flash %9d  .text, .rodata and the initial values of .data (alignment included)\n", flash
	printf "RAM   %9d  .data and .bss %d (the arena %d in it) and the stack %d: the deepest of %s_create_in\n",
		ram, outsize[".data"] + outsize[".bss"], probe["arena"], probe["stack"], model
	printf "                 and one %s_run at the largest dims, measured on the emulator (of the %d reserved)\n",
		model, probe["stack_size"]
	printf "not counted: the inputs and outputs at the largest dims, %d bytes (the caller's buffers)\n", probe["io"]
	bad = 0
	if (probe["status"] != "0") {
		printf "make size: the probe's run failed: %s (status %s); its stack was not measured to the end\n",
			status_text, probe["status"] > "/dev/stderr"
		bad = 1
	}
	if (heap != "") {
		printf "make size: the image links%s: the model or libcellrt allocates\n", heap > "/dev/stderr"
		bad = 1
	}
	exit bad
}
