// SPDX-License-Identifier: GPL-2.0
/*
 * The report page's script: reads the data (the JSON element "iospan-data", whose
 * format iospan-report(8) documents) and draws it. Names from the kernel and from
 * users (processes, files, cgroups, disks) only ever go into the page as text
 * (textContent, SVG text nodes, uPlot's legend text), never as markup.
 *
 * What it drew is left in window.iospanReport (charts, heatmaps, notes) for scripts
 * and the tests.
 */
'use strict';

(function () {
	const report = { ready: false, charts: [], heatmaps: {}, notes: [], errors: [] };
	window.iospanReport = report;

	const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf',
		'#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];
	/*
	 * trace's stages (iospan-trace(8)) and top's block ones (q2d, d2c); d2c split by the
	 * driver in shades of d2c's blue.
	 */
	const STAGE_COLORS = {
		pre_block: '#9467bd', throttle: '#d62728', q2q: '#8c564b', q2g: '#ff7f0e',
		g2i: '#e6a700', i2d: '#bcbd22', q2d: '#ff7f0e', d2c: '#1f77b4', q2c: '#17becf',
		drv_in: '#6baed6', device: '#08519c', drv_out: '#9ecae1', post_block: '#2ca02c',
	};
	const TOP_N = 8;
	const SYNC = 'iospan';

	/* ---------------------------------------------------------------- helpers */

	function el(tag, attrs, text) {
		const e = document.createElement(tag);
		for (const k in attrs || {})
			e.setAttribute(k, attrs[k]);
		if (text !== undefined && text !== null)
			e.textContent = String(text);
		return e;
	}

	function svgEl(tag, attrs) {
		const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
		for (const k in attrs || {})
			e.setAttribute(k, attrs[k]);
		return e;
	}

	function note(parent, text, cls) {
		parent.appendChild(el('p', { class: 'note' + (cls ? ' ' + cls : '') }, text));
		report.notes.push(text);
	}

	function fmtTime(t) {
		if (t === null || t === undefined || !isFinite(t))
			return '-';
		const d = new Date(t * 1000);
		const p = (n, w) => String(n).padStart(w || 2, '0');
		return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
			p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()) + '.' +
			p(d.getMilliseconds(), 3).slice(0, 1);
	}

	function fmtBytes(b) {
		if (b === null || b === undefined || !isFinite(b))
			return '-';
		const u = ['B', 'KB', 'MB', 'GB', 'TB'];
		let i = 0;
		while (Math.abs(b) >= 1000 && i < u.length - 1) {
			b /= 1000;
			i++;
		}
		return (i ? b.toFixed(b < 10 ? 2 : 1) : String(b)) + ' ' + u[i];
	}

	function fmtUs(us) {
		if (us === null || us === undefined || !isFinite(us))
			return '-';
		if (us >= 1e6)
			return (us / 1e6).toFixed(2) + ' s';
		if (us >= 1e3)
			return (us / 1e3).toFixed(2) + ' ms';
		return us.toFixed(us < 10 ? 2 : 0) + ' µs';
	}

	function fmtNum(v, d) {
		return v === null || v === undefined || !isFinite(v) ? '-' : v.toFixed(d === undefined ? 1 : d);
	}

	function uniqSorted(values) {
		return Array.from(new Set(values)).sort((a, b) => a - b);
	}

	function parseJson(text, fallback) {
		if (typeof text !== 'string')
			return fallback;
		try {
			return JSON.parse(text);
		} catch (e) {
			return fallback;
		}
	}

	function chartWidth(container) {
		return Math.max(400, Math.min(1350, (container.clientWidth || 1000) - 10));
	}

	/* ---------------------------------------------------------------- the data */

	/* A table of the data ({columns, rows}) as objects, one a row. */
	function rowsOf(t) {
		if (!t || !Array.isArray(t.rows))
			return [];
		return t.rows.map(r => {
			const o = {};
			t.columns.forEach((c, i) => { o[c] = r[i]; });
			return o;
		});
	}

	const doc = JSON.parse(document.getElementById('iospan-data').textContent);
	report.doc = doc;
	const inc = doc.incident || null;
	/* Times in the tables ("t") are seconds from t0 (the incident's start). */
	const t0 = inc ? inc.t0 : (doc.recording ? doc.recording.t0 : 0);
	function timed(t) {
		const r = rowsOf(t);
		r.forEach(x => { x.time = Math.round((t0 + x.t) * 1000) / 1000; });
		return r;
	}
	const samples = timed(inc ? inc.samples : (doc.recording ? doc.recording.samples : null));
	const slowReqs = inc ? timed(inc.slow_requests) : [];
	const times = uniqSorted(samples.map(s => s.time));
	const disks = Array.from(new Set(samples.map(s => s.disk)));
	const intervalOf = {};
	samples.forEach(s => { intervalOf[s.time] = s.interval_s; });
	const bySample = {};
	samples.forEach(s => { bySample[s.disk + '\u0000' + s.time] = s; });

	/* The marks on every time chart: the trigger, the onset, triggers that extended it. */
	const marks = [];
	if (inc && inc.rule !== 'capture') {
		marks.push({ t: inc.start, color: '#d62728', label: 'trigger' });
		if (inc.onset && inc.onset.time)
			marks.push({ t: inc.onset.time, color: '#ff7f0e', label: 'onset' });
		timed(inc.trigger_list).slice(1).forEach(tr =>
			marks.push({ t: tr.time, color: '#d62728', label: 'trigger' }));
	}

	function marksPlugin() {
		return {
			hooks: {
				draw: [u => {
					const ctx = u.ctx;
					ctx.save();
					ctx.setLineDash([6, 4]);
					ctx.lineWidth = 1.5 * devicePixelRatio;
					for (const m of marks) {
						const x = Math.round(u.valToPos(m.t, 'x', true));
						if (x < u.bbox.left || x > u.bbox.left + u.bbox.width)
							continue;
						ctx.strokeStyle = m.color;
						ctx.beginPath();
						ctx.moveTo(x, u.bbox.top);
						ctx.lineTo(x, u.bbox.top + u.bbox.height);
						ctx.stroke();
					}
					ctx.restore();
				}],
			},
		};
	}

	/* Zooming one time chart zooms them all (the cursor is synced by uPlot itself). */
	const timeCharts = [];
	let syncing = false;

	/*
	 * The wheel over a chart's plot zooms its time axis around the cursor; with Shift
	 * held (or a sideways scroll) it pans. The other charts follow (setScale below).
	 */
	function wheel(u, e) {
		const { min, max } = u.scales.x;
		if (min === null || max === null || !(max > min))
			return;
		e.preventDefault();
		const span = max - min;
		const sideways = e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY);
		const delta = sideways ? (e.deltaX || e.deltaY) : e.deltaY;
		if (sideways) {
			const shift = span * 0.1 * Math.sign(delta);
			u.setScale('x', { min: min + shift, max: max + shift });
			return;
		}
		const at = u.posToVal(e.offsetX, 'x');
		const f = delta > 0 ? 1.25 : 0.8;
		u.setScale('x', { min: at - (at - min) * f, max: at + (max - at) * f });
	}

	function zoomPlugin() {
		return {
			hooks: {
				ready: [u => {
					u.over.addEventListener('wheel', e => wheel(u, e), { passive: false });
				}],
				setScale: [(u, key) => {
					if (key !== 'x' || syncing)
						return;
					syncing = true;
					const { min, max } = u.scales.x;
					for (const c of timeCharts)
						if (c !== u)
							c.setScale('x', { min, max });
					syncing = false;
				}],
			},
		};
	}

	function addChart(parent, name, title, opts, data, isTime) {
		const box = el('div', { class: 'chart', 'data-chart': name });
		parent.appendChild(box);
		const o = Object.assign({
			title: title,
			width: chartWidth(parent),
			height: 220,
		}, opts);
		if (isTime) {
			o.cursor = Object.assign({ sync: { key: SYNC } }, o.cursor || {});
			o.plugins = (o.plugins || []).concat([marksPlugin(), zoomPlugin()]);
		}
		const u = new uPlot(o, data, box);
		if (isTime)
			timeCharts.push(u);
		report.charts.push({ name: name, title: title, kind: 'canvas' });
		return u;
	}

	/* ---------------------------------------------------------------- summary */

	function summary() {
		const t = document.getElementById('summary-table');
		const row = (k, v) => {
			const tr = el('tr');
			tr.appendChild(el('th', {}, k));
			tr.appendChild(el('td', { class: 'name' }, v));
			t.appendChild(tr);
		};
		const kinds = {
			incident: 'an incident iospan watch stored',
			capture: 'a capture made by iospan report',
			recording: 'a recording of iospan stat (iostat figures only)',
		};
		document.getElementById('title').textContent = 'iospan report: ' +
			(doc.kind === 'incident' ? 'incident ' + inc.id : doc.kind);
		document.getElementById('subtitle').textContent = (kinds[doc.kind] || doc.kind) +
			'; made ' + fmtTime(doc.generated) + ' by iospan ' + doc.iospan_version;
		row('source', doc.source);
		if (inc) {
			row('host', inc.hostname || 'not stored');
			row('kernel', inc.kernel || 'not stored');
		}
		row('disks', disks.length ? disks.join(', ') : 'none sampled');
		const t0 = times.length ? times[0] - (intervalOf[times[0]] || 0) : null;
		const t1 = times.length ? times[times.length - 1] : null;
		row('window', fmtTime(t0) + ' to ' + fmtTime(t1) + ' (' +
			(times.length ? (t1 - t0).toFixed(1) : 0) + ' s, ' + times.length + ' samples)');
		if (!inc)
			return;
		if (inc.rule === 'capture') {
			row('capture', fmtTime(inc.start) + ', ' + inc.capture_s + ' s');
		} else {
			row('trigger', fmtTime(inc.start) + ': ' + (inc.disk || 'system') + ' ' + inc.rule +
				' ' + fmtNum(inc.value, 2) + ' >= ' + fmtNum(inc.threshold, 2) +
				(inc.triggers > 1 ? ' (' + inc.triggers + ' triggers)' : ''));
			row('onset', inc.onset && inc.onset.time ? fmtTime(inc.onset.time) + ' (' +
				fmtNum(inc.onset.before_trigger_s, 1) + ' s before the trigger, ' +
				inc.rule + ' ' + fmtNum(inc.onset.value, 2) + ')' : 'not found in the window');
		}
		row('state', inc.state + (inc.end_reason ? ' (' + inc.end_reason + ')' : ''));
		if (inc.target)
			row('target', inc.target + ': the processes, files, slow requests and stalls are ' +
				'its own; the samples, heatmap and request sizes are the whole disks\'');
		const cov = inc.target ? null : coverage();
		row('coverage', inc.target ? 'not comparable: only the target\'s I/O is credited' :
			cov === null ? 'not available (no BPF collector, or no DISK bytes)' :
			(cov.pct.toFixed(1) + '% of the DISK bytes /proc/diskstats counted are credited to a ' +
			 'process (' + fmtBytes(cov.attributed) + ' of ' + fmtBytes(cov.disk) + ')'));
		const lost = losses();
		row('lost or unattributed', lost.length ? lost.map(l => l.what + ' ' + l.count).join(', ') :
			'nothing');
		const coll = parseJson(inc.collectors, null);
		if (coll)
			row('collectors', Object.keys(coll).map(k => k + ': ' + coll[k]).join('; '));
		else
			row('collectors', 'not stored (an older watcher)');
		row('FS bytes', inc.fs_bytes === 'pages' ? 'from the page cache, in whole pages' :
			inc.fs_bytes === 'syscalls' ? 'from the syscalls, byte-exact' : 'not counted');
	}

	/* DISK bytes credited to processes in the capture against what diskstats counted. */
	function coverage() {
		let disk = 0, attributed = 0;
		for (const s of samples)
			if (s.phase === 'capture')
				disk += ((s.rkB_s || 0) + (s.wkB_s || 0)) * 1024 * (s.interval_s || 0);
		const procs = rowsOf(inc.process_latency);
		for (const p of procs)
			attributed += p.bytes || 0;
		if (!disk || !procs.length)
			return null;
		report.coverage = { disk: disk, attributed: attributed, pct: 100 * attributed / disk };
		return report.coverage;
	}

	function losses() {
		return rowsOf(inc.dropped);
	}

	/* ---------------------------------------------------------------- over time */

	function seriesOf(field, scale) {
		return disks.map(d => times.map(t => {
			const s = bySample[d + '\u0000' + t];
			const v = s ? s[field] : null;
			return v === null || v === undefined ? null : v * (scale || 1);
		}));
	}

	function timeChart(parent, name, title, unit, fields) {
		const data = [times];
		const series = [{}];
		let k = 0;
		for (const f of fields) {
			const per = seriesOf(f.field, f.scale);
			per.forEach((vals, i) => {
				if (f.skipZero && vals.every(v => !v))
					return;
				data.push(vals);
				series.push({
					label: disks[i] + ' ' + f.label,
					stroke: PALETTE[k++ % PALETTE.length],
					width: 1.5,
					value: (u, v) => v === null || v === undefined ? '-' : v.toFixed(2) + ' ' + unit,
				});
			});
		}
		if (data.length === 1)
			return note(parent, title + ': nothing to draw');
		addChart(parent, name, title, {
			series: series,
			axes: [{}, { label: unit, size: 60 }],
			scales: { x: { time: true } },
		}, data, true);
	}

	function overTime() {
		const p = document.getElementById('time-charts');
		if (!times.length)
			return note(p, 'no samples');
		timeChart(p, 'iops', 'IOPS (completed requests per second)', '/s', [
			{ field: 'r_s', label: 'read' }, { field: 'w_s', label: 'write' },
			{ field: 'd_s', label: 'discard', skipZero: true },
			{ field: 'f_s', label: 'flush', skipZero: true }]);
		/* iostat's kB are KiB (sectors / 2), its MB/s MiB/s: so here. */
		timeChart(p, 'mbps', 'Throughput (MiB/s)', 'MiB/s', [
			{ field: 'rkB_s', label: 'read', scale: 1 / 1024 },
			{ field: 'wkB_s', label: 'write', scale: 1 / 1024 },
			{ field: 'dkB_s', label: 'discard', scale: 1 / 1024, skipZero: true }]);
		timeChart(p, 'await', 'Await (ms; queue and device time, as iostat)', 'ms', [
			{ field: 'r_await', label: 'read' }, { field: 'w_await', label: 'write' }]);
		timeChart(p, 'util', '%util (time the disk had requests in flight)', '%', [
			{ field: 'util', label: '%util' }]);
		timeChart(p, 'aqu', 'Queue size (aqu-sz: requests in flight on average)', 'req', [
			{ field: 'aqu_sz', label: 'aqu-sz' }]);
		const psi = times.map(t => {
			const s = samples.find(x => x.time === t && x.psi_some_avg10 !== null &&
				x.psi_some_avg10 !== undefined);
			return s ? [s.psi_some_avg10, s.psi_full_avg10] : [null, null];
		});
		if (psi.every(v => v[0] === null)) {
			note(p, 'I/O pressure: not available here (' + (inc ? 'no /proc/pressure/io on the watched machine' :
				'a recording holds /proc/diskstats only') + ')');
			return;
		}
		addChart(p, 'psi', 'I/O pressure (PSI avg10: % of time tasks waited for I/O)', {
			series: [{}, { label: 'some', stroke: PALETTE[4], width: 1.5 },
				{ label: 'full', stroke: PALETTE[1], width: 1.5 }],
			axes: [{}, { label: '%', size: 60 }],
			scales: { x: { time: true } },
		}, [times, psi.map(v => v[0]), psi.map(v => v[1])], true);
	}

	/* ---------------------------------------------------------------- heatmaps */

	/* Bucket k of a latency histogram holds (2^(k-1), 2^k] ns: its bounds in µs. */
	const bucketHiUs = k => Math.pow(2, k) / 1e3;
	const bucketLoUs = k => k ? Math.pow(2, k - 1) / 1e3 : 0.0005;

	function quantileUs(counts, q) {
		const total = counts.reduce((a, b) => a + b, 0);
		if (!total)
			return null;
		let acc = 0;
		for (let k = 0; k < counts.length; k++) {
			acc += counts[k];
			if (acc >= q * total)
				return bucketHiUs(k);
		}
		return bucketHiUs(counts.length - 1);
	}

	/* Per disk: each sample's q2c counts per bucket, all ops summed. */
	function heatmapData(disk) {
		const rows = timed(inc.heatmap).filter(h => h.disk === disk);
		if (!rows.length)
			return null;
		const per = {};
		let maxK = 0;
		for (const h of rows) {
			/* "bucket:count,...": the buckets with requests */
			const acc = per[h.time] || (per[h.time] = []);
			for (const kc of String(h.counts).split(',')) {
				const [k, c] = kc.split(':').map(Number);
				acc[k] = (acc[k] || 0) + c;
				maxK = Math.max(maxK, k);
			}
		}
		const ts = times.filter(t => per[t]);
		const counts = ts.map(t => {
			const a = per[t];
			const out = [];
			for (let k = 0; k <= maxK; k++)
				out.push(a[k] || 0);
			return out;
		});
		return { times: ts, counts: counts, totals: counts.map(c => c.reduce((a, b) => a + b, 0)) };
	}

	function heatmaps() {
		const p = document.getElementById('heatmap-charts');
		if (!inc)
			return note(p, 'not in a recording: latency histograms come from the BPF collectors');
		let drawn = 0;
		for (const disk of disks) {
			const hm = heatmapData(disk);
			if (!hm)
				continue;
			report.heatmaps[disk] = hm;
			let minK = Infinity, maxK = 0, maxC = 0;
			hm.counts.forEach(c => c.forEach((v, k) => {
				if (v) {
					minK = Math.min(minK, k);
					maxK = Math.max(maxK, k);
					maxC = Math.max(maxC, v);
				}
			}));
			if (!maxC)
				continue;
			const p50 = hm.counts.map(c => quantileUs(c, 0.5));
			const p99 = hm.counts.map(c => quantileUs(c, 0.99));
			const x = times;
			const idx = {};
			hm.times.forEach((t, i) => { idx[t] = i; });
			const draw = u => {
				const ctx = u.ctx;
				ctx.save();
				ctx.beginPath();
				ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
				ctx.clip();
				hm.times.forEach((t, i) => {
					const x0 = u.valToPos(t - (intervalOf[t] || 1), 'x', true);
					const x1 = u.valToPos(t, 'x', true);
					hm.counts[i].forEach((c, k) => {
						if (!c)
							return;
						const y0 = u.valToPos(bucketHiUs(k), 'y', true);
						const y1 = u.valToPos(bucketLoUs(k), 'y', true);
						const f = Math.log(1 + c) / Math.log(1 + maxC);
						ctx.fillStyle = 'hsl(' + (48 - 48 * f).toFixed(1) + ', 95%, ' +
							(88 - 50 * f).toFixed(1) + '%)';
						ctx.fillRect(x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0));
					});
				});
				ctx.restore();
			};
			addChart(p, 'heatmap-' + disk, disk + ': requests per second by q2c (log2 buckets; ' +
				'colour: count), p50 and p99', {
				series: [{}, { label: 'p50', stroke: '#1f3b73', width: 2, value: (u, v) => fmtUs(v) },
					{ label: 'p99', stroke: '#111111', width: 2, dash: [5, 3],
						value: (u, v) => fmtUs(v) }],
				axes: [{}, { label: 'q2c (µs)', size: 70 }],
				scales: {
					x: { time: true },
					y: { distr: 3, log: 2, range: () => [bucketLoUs(minK), bucketHiUs(maxK)] },
				},
				hooks: { drawClear: [], draw: [draw] },
			}, [x, x.map(t => idx[t] === undefined ? null : p50[idx[t]]),
				x.map(t => idx[t] === undefined ? null : p99[idx[t]])], true);
			drawn++;
		}
		if (!drawn)
			note(p, 'no latency histograms stored (no BPF collector, or no request completed)');
	}

	/* ---------------------------------------------------------------- who */

	/* Stacked areas: the busiest (keys 0 to 7) by total, the rest as "other" (key -1). */
	function stackedChart(parent, name, title, who) {
		const keys = rowsOf(who && who.keys);
		const series = timed(who && who.series);
		if (!keys.length)
			return note(parent, title + ': nothing to draw');
		const top = keys.slice(0, TOP_N);
		const rest = keys.length - top.length;
		const per = top.map(() => ({}));
		const other = {};
		for (const r of series) {
			if (r.key >= 0 && r.key < top.length)
				per[r.key][r.time] = r.bytes;
			else
				other[r.time] = (other[r.time] || 0) + r.bytes;
		}
		const rate = (m, t) => (m[t] || 0) / (intervalOf[t] || 1) / 1048576;
		const raw = per.map(m => times.map(t => rate(m, t)));
		if (rest)
			raw.push(times.map(t => rate(other, t)));
		const names = top.map(k => k.label).concat(rest ? ['other (' + rest + ')'] : []);
		report.who = report.who || {};
		report.who[name] = { names: names, mib_s: raw };
		/* Cumulative sums, drawn topmost first: each area covers the ones under it. */
		const cum = [];
		raw.forEach((vals, i) => cum.push(vals.map((v, j) => v + (i ? cum[i - 1][j] : 0))));
		const data = [times];
		const ser = [{}];
		for (let i = cum.length - 1; i >= 0; i--) {
			const c = PALETTE[i % PALETTE.length];
			data.push(cum[i]);
			ser.push({
				label: names[i], stroke: c, fill: c + 'cc', width: 1,
				value: (u, v, si, di) => di === null || di === undefined ? '-' :
					raw[i][di].toFixed(2) + ' MiB/s',
			});
		}
		addChart(parent, name, title, {
			series: ser,
			axes: [{}, { label: 'MiB/s', size: 60 }],
			scales: { x: { time: true } },
		}, data, true);
	}

	function table(parent, title, cols, rows) {
		parent.appendChild(el('h3', {}, title));
		if (!rows.length)
			return note(parent, 'none recorded');
		const t = el('table');
		const head = el('tr');
		cols.forEach(c => head.appendChild(el('th', { class: c.num ? 'num' : '' }, c.title)));
		t.appendChild(head);
		for (const r of rows) {
			const tr = el('tr');
			cols.forEach(c => tr.appendChild(el('td', { class: c.num ? 'num' : 'name' }, c.get(r))));
			t.appendChild(tr);
		}
		parent.appendChild(t);
	}

	function who() {
		const charts = document.getElementById('who-charts');
		const tables = document.getElementById('who-tables');
		if (!inc) {
			note(charts, 'not in a recording: who did the I/O comes from the BPF collectors');
			return;
		}
		stackedChart(charts, 'who-processes', 'Processes: DISK MiB/s (writeback credited to ' +
			'the process that dirtied the pages)', inc.who && inc.who.processes);
		stackedChart(charts, 'who-files', 'Files: DISK MiB/s', inc.who && inc.who.files);
		stackedChart(charts, 'who-cgroups', 'Cgroups: DISK MiB/s', inc.who && inc.who.cgroups);

		const lat = {};
		rowsOf(inc.process_latency).forEach(r => { lat[r.pid + '\u0000' + r.comm] = r; });
		const latOf = (r, f) => {
			const a = lat[r.pid + '\u0000' + r.comm];
			return a ? fmtUs(a[f]) : '-';
		};
		table(tables, 'Busiest processes (the capture)', [
			{ title: 'PID', num: true, get: r => r.pid },
			{ title: 'COMM', get: r => r.comm },
			{ title: 'CGROUP', get: r => r.cgroup || '-' },
			{ title: 'DISK READ', num: true, get: r => fmtBytes(r.disk_read_bytes) },
			{ title: 'DISK WRITE', num: true, get: r => fmtBytes(r.disk_write_bytes) },
			{ title: 'OF IT WRITEBACK', num: true, get: r => fmtBytes(r.writeback_bytes) },
			{ title: 'FS READ', num: true, get: r => fmtBytes(r.fs_read_bytes) },
			{ title: 'FS WRITE', num: true, get: r => fmtBytes(r.fs_write_bytes) },
			{ title: 'Q2C AVG', num: true, get: r => latOf(r, 'q2c_avg_us') },
			{ title: 'Q2C MAX', num: true, get: r => latOf(r, 'q2c_max_us') },
			{ title: 'D2C AVG', num: true, get: r => latOf(r, 'd2c_avg_us') },
			{ title: 'COMMAND', get: r => r.cmdline || '' },
		], rowsOf(inc.busiest_processes));
		table(tables, 'Busiest threads (the capture)', [
			{ title: 'PID', num: true, get: r => r.pid },
			{ title: 'TID', num: true, get: r => r.tid },
			{ title: 'COMM', get: r => r.comm },
			{ title: 'DISK READ', num: true, get: r => fmtBytes(r.disk_read_bytes) },
			{ title: 'DISK WRITE', num: true, get: r => fmtBytes(r.disk_write_bytes) },
			{ title: 'FS READ', num: true, get: r => fmtBytes(r.fs_read_bytes) },
			{ title: 'FS WRITE', num: true, get: r => fmtBytes(r.fs_write_bytes) },
		], rowsOf(inc.busiest_threads));
		table(tables, 'Busiest files (the capture)', [
			{ title: 'FILE', get: r => r.path || ('inode ' + r.inode) },
			{ title: 'DISK', get: r => r.disk || '-' },
			{ title: 'PIDS', get: r => r.pids || '-' },
			{ title: 'DISK READ', num: true, get: r => fmtBytes(r.disk_read_bytes) },
			{ title: 'DISK WRITE', num: true, get: r => fmtBytes(r.disk_write_bytes) },
			{ title: 'FS READ', num: true, get: r => fmtBytes(r.fs_read_bytes) },
			{ title: 'FS WRITE', num: true, get: r => fmtBytes(r.fs_write_bytes) },
			{ title: 'HOW', get: r => [r.direct ? 'direct' : '', r.writeback ? 'writeback' : '']
				.filter(Boolean).join(', ') || 'buffered' },
		], rowsOf(inc.busiest_files));
		table(tables, 'Cgroups (the capture)', [
			{ title: 'CGROUP', get: r => r.cgroup },
			{ title: 'CONTAINER', get: r => r.container || '-' },
			{ title: 'PROCESSES', num: true, get: r => r.processes },
			{ title: 'DISK READ', num: true, get: r => fmtBytes(r.disk_read_bytes) },
			{ title: 'DISK WRITE', num: true, get: r => fmtBytes(r.disk_write_bytes) },
			{ title: 'OF IT WRITEBACK', num: true, get: r => fmtBytes(r.writeback_bytes) },
		], rowsOf(inc.cgroups));
	}

	/* ---------------------------------------------------------------- offsets */

	function offsets() {
		const p = document.getElementById('offset-charts');
		if (!inc)
			return note(p, 'not in a recording: requests come from the BPF collectors');
		const reqs = slowReqs.filter(r => r.offset !== null && r.offset >= 0);
		if (!reqs.length)
			return note(p, 'no request kept one by one (requests are kept when slower than the ' +
				'capture threshold)');
		note(p, 'Each dot is a request kept one by one: those slower than the capture threshold ' +
			'(the slowest of each second when there are more; see "lost or unattributed").');
		for (const disk of Array.from(new Set(reqs.map(r => r.disk)))) {
			const mine = reqs.filter(r => r.disk === disk);
			const total = {};
			mine.forEach(r => { total[r.comm + ' (' + r.pid + ')'] = (total[r.comm + ' (' + r.pid + ')'] || 0) + 1; });
			const procs = Object.keys(total).sort((a, b) => total[b] - total[a]);
			const top = procs.slice(0, TOP_N);
			const groupOf = r => {
				const k = r.comm + ' (' + r.pid + ')';
				return top.indexOf(k) >= 0 ? top.indexOf(k) : top.length;
			};
			const xs = uniqSorted(mine.map(r => r.time));
			const xi = {};
			xs.forEach((t, i) => { xi[t] = i; });
			const nGroups = top.length + (procs.length > top.length ? 1 : 0);
			const cols = [];
			for (let g = 0; g < nGroups; g++)
				cols.push(xs.map(() => null));
			for (const r of mine)
				cols[groupOf(r)][xi[r.time]] = r.offset / 1e9;
			const series = [{}];
			for (let g = 0; g < nGroups; g++)
				series.push({
					label: g < top.length ? top[g] : 'other',
					stroke: PALETTE[g % PALETTE.length],
					fill: PALETTE[g % PALETTE.length],
					paths: () => null,
					points: { show: true, size: 5, fill: PALETTE[g % PALETTE.length] },
					value: (u, v) => v === null || v === undefined ? '-' : v.toFixed(3) + ' GB',
				});
			addChart(p, 'offsets-' + disk, disk + ': offset of each request over time, by process',
				{ series: series, axes: [{}, { label: 'offset (GB)', size: 60 }],
					scales: { x: { time: true } } }, [xs].concat(cols), true);
		}
	}

	/* ---------------------------------------------------------------- sizes */

	function sizes() {
		const p = document.getElementById('size-charts');
		if (!inc)
			return note(p, 'not in a recording: request sizes come from the BPF collectors');
		const rows = rowsOf(inc.sizes);
		if (!rows.length)
			return note(p, 'no size histogram stored');
		const per = {};
		let maxK = 0;
		for (const h of rows) {
			const key = h.disk + ' ' + h.op;
			const acc = per[key] || (per[key] = []);
			acc[h.bucket] = (acc[h.bucket] || 0) + h.count;
			maxK = Math.max(maxK, h.bucket);
		}
		let minK = maxK;
		Object.values(per).forEach(a => a.forEach((c, k) => { if (c) minK = Math.min(minK, k); }));
		const keys = Object.keys(per).sort();
		report.sizes = per;
		const W = chartWidth(p), H = 240, L = 60, B = 40, T = 20;
		const svg = svgEl('svg', { width: W, height: H, 'data-chart': 'sizes', role: 'img' });
		const nb = maxK - minK + 1;
		let maxC = 0;
		keys.forEach(k => per[k].forEach(c => { maxC = Math.max(maxC, c || 0); }));
		const slot = (W - L - 10) / nb, bw = Math.max(2, slot * 0.8 / keys.length);
		const label = k => {
			const b = Math.pow(2, k);
			return b >= 1048576 ? (b / 1048576) + 'M' : b >= 1024 ? (b / 1024) + 'K' : String(b);
		};
		svg.appendChild(svgEl('line', { x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#888' }));
		for (let k = minK; k <= maxK; k++) {
			const x = L + (k - minK) * slot;
			const t = svgEl('text', { x: x + slot / 2, y: H - B + 16, 'text-anchor': 'middle' });
			t.textContent = '≤' + label(k);
			svg.appendChild(t);
			keys.forEach((key, i) => {
				const c = per[key][k] || 0;
				if (!c)
					return;
				const h = (H - B - T) * c / maxC;
				const r = svgEl('rect', { x: x + slot * 0.1 + i * bw, y: H - B - h, width: bw, height: h,
					fill: PALETTE[i % PALETTE.length] });
				const tip = svgEl('title');
				tip.textContent = key + ' ≤' + label(k) + 'B: ' + c + ' requests';
				r.appendChild(tip);
				svg.appendChild(r);
			});
		}
		const ylab = svgEl('text', { x: 4, y: T - 6 });
		ylab.textContent = 'requests (max ' + maxC + ')';
		svg.appendChild(ylab);
		const box = el('div', { class: 'chart' });
		box.appendChild(el('div', {}, 'Request sizes in the capture (log2 buckets, bytes)'));
		box.appendChild(svg);
		const legend = el('div');
		keys.forEach((key, i) => {
			legend.appendChild(el('span', { class: 'legend-swatch', style: 'background:' +
				PALETTE[i % PALETTE.length] }));
			legend.appendChild(document.createTextNode(key));
		});
		box.appendChild(legend);
		p.appendChild(box);
		report.charts.push({ name: 'sizes', title: 'Request sizes', kind: 'svg' });
	}

	/* ---------------------------------------------------------------- slow requests */

	function waterfall() {
		const p = document.getElementById('waterfall');
		if (!inc)
			return note(p, 'not in a recording: slow requests come from the BPF collectors');
		const reqs = slowReqs.slice(0, 60);
		const kept = rowsOf(inc.slow_requests_kept)[0];
		if (!reqs.length)
			return note(p, 'no slow request kept');
		note(p, 'The ' + reqs.length + ' slowest requests kept (of ' + (kept ? kept.count : slowReqs.length) +
			'), each a bar split into the stages that add up to its time.');
		const W = chartWidth(p), rowH = 34, L = 10, R = 10;
		const svg = svgEl('svg', { width: W, height: reqs.length * rowH + 10, 'data-chart': 'waterfall',
			role: 'img' });
		const maxUs = Math.max(...reqs.map(r => r.total_us || 0)) || 1;
		const stagesSeen = new Set();
		reqs.forEach((r, i) => {
			const y = 5 + i * rowH;
			const t = svgEl('text', { x: L, y: y + 11 });
			const off = r.offcpu_us > 0 ? '  off-CPU ' + fmtUs(r.offcpu_us) : '';
			t.textContent = fmtUs(r.total_us) + off + '  ' + (r.comm || '?') + ' (' + r.pid + ')  ' + r.op +
				' ' + fmtBytes(r.bytes) + ' at ' + r.offset + ' on ' + r.disk +
				(r.path ? '  ' + r.path : '');
			svg.appendChild(t);
			let x = L;
			const scale = (W - L - R) / maxUs;
			/* The stages that add up to its total, in time order; an older watcher's rows have none. */
			const parts = parseJson(r.parts, []);
			if (!parts.length) {
				const t2 = svgEl('text', { x: L, y: y + 27 });
				t2.textContent = '(stages not stored by the watcher of this incident)';
				svg.appendChild(t2);
			}
			for (const [name, v] of parts) {
				if (typeof v !== 'number' || !(v > 0))
					continue;
				stagesSeen.add(name);
				const w = Math.max(1, v * scale);
				const rect = svgEl('rect', { x: x, y: y + 15, width: w, height: 14,
					fill: STAGE_COLORS[name] || PALETTE[stagesSeen.size % PALETTE.length],
					'data-stage': name });
				const tip = svgEl('title');
				tip.textContent = name + ': ' + fmtUs(v);
				rect.appendChild(tip);
				svg.appendChild(rect);
				x += w;
			}
		});
		p.appendChild(svg);
		const legend = el('div');
		Array.from(stagesSeen).forEach((name, i) => {
			legend.appendChild(el('span', { class: 'legend-swatch', style: 'background:' +
				(STAGE_COLORS[name] || PALETTE[(i + 1) % PALETTE.length]) }));
			legend.appendChild(document.createTextNode(name));
		});
		p.appendChild(legend);
		report.stages = Array.from(stagesSeen);
		report.charts.push({ name: 'waterfall', title: 'Slow requests', kind: 'svg' });
	}

	function stalls() {
		const p = document.getElementById('stall-list');
		if (!inc)
			return note(p, 'not in a recording: stalls come from the BPF collectors');
		const rows = timed(inc.stalls).slice(0, 30);
		if (!rows.length)
			return note(p, 'no stall kept (tasks are kept when blocked on I/O longer than the stall ' +
				'threshold)');
		for (const s of rows) {
			p.appendChild(el('h3', {}, fmtTime(s.time) + ': ' + (s.comm || '?') + ' (' + s.pid + '/' +
				s.tid + ') waited ' + fmtUs(s.wait_us) + (s.count > 1 ? ' (' + s.count + ' times)' : '')));
			p.appendChild(el('pre', { class: 'stack' }, parseJson(s.stack, []).join('\n')));
		}
	}

	/* ---------------------------------------------------------------- run */

	const parts = [summary, overTime, heatmaps, who, offsets, sizes, waterfall, stalls];
	for (const part of parts) {
		try {
			part();
		} catch (e) {
			/* One part that fails leaves the others drawn, and says so. */
			report.errors.push(part.name + ': ' + e);
			console.error('iospan report: ' + part.name + ': ' + e);
		}
	}
	/* The time charts' x ranges (the tests check they move together). */
	report.timeRanges = () => timeCharts.map(u => [u.scales.x.min, u.scales.x.max]);
	/* From the page's start to all drawn, for the tests and the README's figure. */
	report.readyMs = performance.now();
	report.ready = true;
})();
