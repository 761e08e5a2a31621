// drive.mjs: runs the WebAssembly tests of tests/test_wasm.py in Node and in
// Chromium.  ROOT (cellc's tree) is served over HTTP on 127.0.0.1, so that
// both load every file by URL as a web page does.
//
//   node drive.mjs ROOT node KIT.json...      check_kit.mjs in Node
//   node drive.mjs ROOT chromium KIT.json...  the same in Chromium (kit.html)
//   node drive.mjs ROOT page PAGE WAV OUT.json SHOT.png
//       opens PAGE (a path under ROOT) in Chromium, picks WAV in its file
//       input (#wav), waits for the page's window.vadResult (or
//       window.vadError), writes it to OUT.json and a screenshot to SHOT.png
//
// KIT.json paths are under ROOT.  Prints `PASS|FAIL NAME DETAIL` per check;
// exit status 0 when none failed, 1 otherwise.  Chromium is Debian's
// (/usr/bin/chromium), driven by playwright-core (npm, found through
// NODE_PATH: build/web/node_modules), headless with a fresh profile.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const TYPES = {'.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.json': 'application/json',
	       '.wasm': 'application/wasm'};

// ROOT over HTTP: [server, base URL]
async function serve(root) {
	const server = createServer(async (req, res) => {
		const p = path.join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname));
		try {
			if (!p.startsWith(root))
				throw new Error('outside');
			const body = await readFile(p);
			res.writeHead(200, {'Content-Type': TYPES[path.extname(p)] || 'application/octet-stream'});
			res.end(body);
		} catch (e) {
			res.writeHead(404);
			res.end();
		}
	});
	await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
	return [server, 'http://127.0.0.1:' + server.address().port + '/'];
}

async function browser() {
	const { chromium } = createRequire(import.meta.url)('playwright-core');
	return chromium.launch({
		executablePath: '/usr/bin/chromium', headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
		       '--disable-component-update', '--disable-sync'],
	});
}

function report(prefix, results) {
	let failed = 0;
	for (const r of results) {
		failed += !r.ok;
		console.log((r.ok ? 'PASS ' : 'FAIL ') + prefix + r.name + (r.detail ? ' ' + r.detail : ''));
	}
	return failed;
}

async function main() {
	const [root0, mode, ...args] = process.argv.slice(2);
	const root = path.resolve(root0);
	const [server, base] = await serve(root);
	let failed = 0, b = null;
	try {
		if (mode === 'node') {
			const { check } = await import('./check_kit.mjs');
			for (const k of args) {
				const kit = JSON.parse(await readFile(path.join(root, k), 'utf8'));
				const url = new URL(k, base);
				// the module is imported from a file (Node imports no http URL);
				// everything it loads comes over HTTP, as in a page
				const { createModel } = await import(pathToFileURL(path.join(path.dirname(path.join(root, k)), kit.module)));
				failed += report(kit.name + '/node/', await check(createModel, kit, url.href));
				// and from paths on disk, Node's other way
				const dir = path.dirname(path.join(root, k));
				try {
					const m = await createModel(path.join(dir, kit.weights), {wasm: path.join(dir, kit.wasm)});
					m.destroy();
					failed += report(kit.name + '/node/', [{name: 'create_from_paths', ok: true}]);
				} catch (e) {
					failed += report(kit.name + '/node/', [{name: 'create_from_paths', ok: false, detail: e.message}]);
				}
			}
		} else if (mode === 'chromium') {
			b = await browser();
			const page = await b.newPage();
			const logs = [];
			page.on('console', (m) => logs.push(m.text()));
			page.on('pageerror', (e) => logs.push(String(e)));
			for (const k of args) {
				const kit = JSON.parse(await readFile(path.join(root, k), 'utf8'));
				await page.goto(new URL('tests/wasm/kit.html?kit=' + encodeURIComponent(k), base).href);
				const res = await page.waitForFunction(() => window.results, null, {timeout: 120000}).then((h) => h.jsonValue());
				if (!res.length)
					res.push({name: 'page', ok: false, detail: logs.join(' | ')});
				failed += report(kit.name + '/chromium/', res);
			}
		} else if (mode === 'page') {
			const [pagePath, wav, out, shot] = args;
			b = await browser();
			const page = await b.newPage({viewport: {width: 1100, height: 900}});
			const logs = [];
			page.on('console', (m) => logs.push(m.text()));
			page.on('pageerror', (e) => logs.push(String(e)));
			await page.goto(new URL(pagePath, base).href);
			await page.waitForFunction(() => window.vadReady || window.vadError, null, {timeout: 60000});
			await page.setInputFiles('#wav', wav);
			const h = await page.waitForFunction(() => window.vadResult || window.vadError, null, {timeout: 120000});
			const r = await h.jsonValue();
			await page.screenshot({path: shot, fullPage: true});
			writeFileSync(out, JSON.stringify(typeof r === 'string' ? {error: r, logs} : r));
		} else {
			throw new Error('usage: node drive.mjs ROOT node|chromium KIT.json... | ROOT page PAGE WAV OUT.json SHOT.png');
		}
	} finally {
		if (b)
			await b.close();
		server.close();
	}
	process.exit(failed ? 1 : 0);
}

main().catch((e) => {
	console.log('FAIL drive ' + (e && e.stack || e));
	process.exit(1);
});
