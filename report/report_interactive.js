/*
 * report_interactive.js - the page script of kvsim's HTML report, inlined
 * at build time after Chart.js.  report_interactive.c writes each chart as a
 * JSON spec in a script element of type application/json and class
 * kvs-chart inside its figure; this script draws every spec with Chart.js:
 *
 *   - hover: the nearest points' values, formatted with units;
 *   - legend: a click hides or shows a series (a policy, a memory part);
 *   - zoom: drag across a chart whose spec has "zoom" to zoom its x axis,
 *     double-click or the reset button to zoom out;
 *   - theme: light or dark, following prefers-color-scheme.
 *
 * After drawing it records on <body>: data-charts (specs found),
 * data-charts-ok (charts drawn with all their points), data-script-errors,
 * and data-images / data-images-broken for the static <img> figures.  The
 * browser test reads them; with #selftest in the URL it also hovers the
 * first point of the first chart through a real mouse event and records
 * the tooltip text as data-hover.
 */
(function () {
	'use strict';
	var errors = [];
	function mark() {
		document.body.setAttribute('data-script-errors', String(errors.length));
		if (errors.length)
			document.body.setAttribute('data-script-error-text', errors.join(' | '));
	}
	window.addEventListener('error', function (e) {
		errors.push(String(e.message || e));
		mark();
	});

	var dark = window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
	var INK = dark ? '#d8d8d8' : '#333333';
	var GRID = dark ? 'rgba(255,255,255,0.12)' : 'rgba(0,0,0,0.09)';

	/* ---- numbers for people ------------------------------------------- */
	function sig(v, n) {
		if (v === 0) return '0';
		var a = Math.abs(v);
		if (a >= Math.pow(10, n)) return Math.round(v).toLocaleString('en-US');
		var d = Math.max(0, n - 1 - Math.floor(Math.log10(a)));
		return Number(v.toFixed(Math.min(d, 12))).toLocaleString('en-US', { maximumFractionDigits: 12 });
	}
	function fmt(v, kind, unit) {
		if (v === null || v === undefined || !isFinite(v)) return '-';
		switch (kind) {
		case 'unit': return sig(v, 3) + ' ' + (unit || '');
		case 'sec':
			var a = Math.abs(v);
			if (a === 0) return '0 s';
			if (a < 1e-3) return sig(v * 1e6, 3) + ' µs';
			if (a < 1) return sig(v * 1e3, 3) + ' ms';
			if (a < 120) return sig(v, 3) + ' s';
			if (a < 7200) return sig(v / 60, 3) + ' min';
			return sig(v / 3600, 3) + ' h';
		case 'pct':
			if (v > 0 && v < 0.01) return '<0.01 %';
			return sig(v, 3) + ' %';
		case 'count': return Math.round(v).toLocaleString('en-US');
		case 'rate': return sig(v, 3) + ' req/s';
		case 'x': return sig(v, 3) + '×';
		case 'bs': return 'block ' + Math.round(v).toLocaleString('en-US');
		default: return sig(v, 3);
		}
	}
	function tick(v, kind, log, unit) {
		if (log) {
			var e = Math.log10(Math.abs(v));
			var m = Math.abs(v) / Math.pow(10, Math.floor(e + 1e-9));
			if (Math.abs(m - 1) > 1e-6 && Math.abs(m - 2) > 1e-6 && Math.abs(m - 5) > 1e-6)
				return '';
		}
		if (kind === 'bs') return Math.round(v).toLocaleString('en-US');
		if (kind === 'pct') return sig(v, 3) + ' %';  /* a tick is exact: no "<0.01" */
		return fmt(v, kind, unit);
	}

	/* ---- one chart ---------------------------------------------------- */
	function dataset(s, spec) {
		var pts = [];
		for (var i = 0; i + 1 < s.data.length; i += 2) {
			var p = { x: s.data[i], y: s.data[i + 1] };
			if (s.notes && s.notes[i / 2]) p.note = s.notes[i / 2];
			pts.push(p);
		}
		var ds = {
			label: s.name,
			data: pts,
			borderColor: s.color,
			backgroundColor: s.fill ? s.color : s.color,
			borderWidth: s.width || (s.fill ? 0.5 : 2),
			borderDash: s.dash ? [7, 5] : [],
			pointRadius: s.points ? 5 : 0,
			pointHoverRadius: s.points ? 7 : 4,
			pointHitRadius: s.points ? 8 : 3,
			showLine: s.line !== false,
			spanGaps: false,
			fill: s.fill ? (s.first ? 'origin' : '-1') : false,
			stepped: s.stepped ? 'after' : false,
			order: s.order || 0,
			kvsRef: !!s.ref
		};
		if (s.ref) {
			ds.pointRadius = 0;
			ds.pointHitRadius = 0;
			ds.borderWidth = 1.5;
			ds.borderColor = INK;
		}
		return ds;
	}

	function axis(a, horizontal) {
		var o = {
			type: a.cat ? 'category' : (a.log ? 'logarithmic' : 'linear'),
			title: { display: true, text: a.title, color: INK, font: { size: 13 } },
			grid: { color: GRID },
			ticks: {
				color: INK,
				autoSkip: true,
				maxRotation: 0,
				callback: function (v, i, ticks) {
					if (a.cat) return a.cat[v] !== undefined ? a.cat[v] : v;
					return tick(v, a.fmt, a.log, a.unit);
				}
			}
		};
		if (a.cat) o.labels = a.cat;
		if (a.min !== undefined) o.min = a.min;
		if (a.max !== undefined) o.max = a.max;
		if (a.stacked) o.stacked = true;
		if (!a.log && !a.cat && a.min === undefined && a.zero) o.beginAtZero = true;
		return o;
	}

	/* drag to zoom the x axis: a band follows the mouse, release sets the
	 * axis range; double-click or the reset button restores it */
	function attachZoom(chart, fig) {
		var canvas = chart.canvas, band = document.createElement('div');
		band.className = 'kvs-band';
		canvas.parentNode.appendChild(band);
		var x0 = null;
		var reset = fig.querySelector('.kvs-reset');
		function px(e) {
			var r = canvas.getBoundingClientRect();
			return e.clientX - r.left;
		}
		canvas.addEventListener('mousedown', function (e) {
			var ca = chart.chartArea, x = px(e);
			if (x < ca.left || x > ca.right) return;
			x0 = x;
		});
		canvas.addEventListener('mousemove', function (e) {
			if (x0 === null) return;
			var ca = chart.chartArea, x = Math.max(ca.left, Math.min(ca.right, px(e)));
			band.style.display = 'block';
			band.style.left = Math.min(x0, x) + 'px';
			band.style.width = Math.abs(x - x0) + 'px';
			band.style.top = ca.top + 'px';
			band.style.height = (ca.bottom - ca.top) + 'px';
		});
		window.addEventListener('mouseup', function (e) {
			if (x0 === null) return;
			var ca = chart.chartArea, x = Math.max(ca.left, Math.min(ca.right, px(e)));
			band.style.display = 'none';
			if (Math.abs(x - x0) > 6) {
				var sx = chart.scales.x;
				chart.options.scales.x.min = sx.getValueForPixel(Math.min(x0, x));
				chart.options.scales.x.max = sx.getValueForPixel(Math.max(x0, x));
				chart.update('none');
				if (reset) reset.hidden = false;
			}
			x0 = null;
		});
		function unzoom() {
			delete chart.options.scales.x.min;
			delete chart.options.scales.x.max;
			if (chart.kvsX.min !== undefined) chart.options.scales.x.min = chart.kvsX.min;
			if (chart.kvsX.max !== undefined) chart.options.scales.x.max = chart.kvsX.max;
			chart.update('none');
			if (reset) reset.hidden = true;
		}
		canvas.addEventListener('dblclick', unzoom);
		if (reset) reset.addEventListener('click', unzoom);
	}

	function draw(spec, fig) {
		var box = document.createElement('div');
		box.className = 'kvs-canvas';
		if (spec.height) box.style.height = spec.height + 'px';
		var canvas = document.createElement('canvas');
		canvas.setAttribute('role', 'img');
		canvas.setAttribute('aria-label', spec.title);
		box.appendChild(canvas);
		fig.insertBefore(box, fig.querySelector('figcaption'));
		var sets = spec.series.map(function (s) { return dataset(s, spec); });
		var yfmt = spec.y.fmt, xfmt = spec.x.fmt;
		var chart = new Chart(canvas, {
			type: 'line',
			data: spec.x.cat ? { labels: spec.x.cat, datasets: sets } : { datasets: sets },
			options: {
				animation: false,
				responsive: true,
				maintainAspectRatio: false,
				parsing: spec.x.cat ? true : false,
				normalized: true,
				/* a CDF: every policy at the quantile under the mouse */
				interaction: spec.tip === 'cdf' ? { mode: 'index', intersect: false } :
					spec.interaction === 'point' ?
					{ mode: 'nearest', intersect: true } :
					{ mode: 'nearest', axis: 'x', intersect: false },
				scales: { x: axis(spec.x, true), y: axis(spec.y, false) },
				plugins: {
					title: { display: !!spec.title, text: spec.title, color: INK, font: { size: 16, weight: '600' } },
					subtitle: { display: !!spec.subtitle, text: spec.subtitle || '', color: INK, font: { size: 12 }, padding: { bottom: 8 } },
					legend: {
						labels: {
							color: INK, usePointStyle: true, boxWidth: 10,
							filter: function (item, data) { return !data.datasets[item.datasetIndex].kvsHideLegend; }
						}
					},
					tooltip: {
						filter: function (it) { return !it.dataset.kvsRef; },
						callbacks: {
							title: function (items) {
								if (!items.length) return '';
								var r = items[0].raw;
								if (spec.tip === 'cdf')
									return fmt(r.y, yfmt) + ' of requests at or below';
								if (spec.x.cat) return (spec.x.title || '') + ' ' + items[0].label;
								return (spec.x.name || spec.x.title) + ' ' + fmt(r.x, xfmt, spec.x.unit);
							},
							label: function (it) {
								var r = it.raw, v = (r && typeof r === 'object') ? r.y : r;
								var s = spec.tip === 'cdf' ?
									it.dataset.label + ': ' + fmt(r.x, xfmt, spec.x.unit) :
									it.dataset.label + ': ' + fmt(v, yfmt, spec.y.unit);
								if (r && r.note) s += ' (' + r.note + ')';
								return s;
							}
						}
					}
				}
			}
		});
		chart.kvsX = { min: spec.x.min, max: spec.x.max };
		if (spec.zoom) attachZoom(chart, fig);
		var n = 0;
		for (var i = 0; i < chart.data.datasets.length; i++)
			if (!chart.data.datasets[i].kvsRef)
				n += chart.getDatasetMeta(i).data.length;
		canvas.setAttribute('data-points', String(n));
		fig.setAttribute('data-points', String(n));
		return chart;
	}

	function imageCheck() {
		var im = document.images, bad = 0;
		for (var i = 0; i < im.length; i++) {
			if (!im[i].complete || im[i].naturalWidth === 0) {
				bad++;
				var fg = im[i].closest('figure');
				if (fg) fg.classList.add('broken');
			}
		}
		document.body.setAttribute('data-images', String(im.length));
		document.body.setAttribute('data-images-broken', String(bad));
		if (bad) {
			var w = document.getElementById('img-warning');
			w.textContent = bad + ' of ' + im.length +
				' static figures failed to load: keep the PNG and SVG files beside index.html.';
			w.hidden = false;
		}
	}

	/* hover the first drawn point of the first chart with a real mouse event
	 * and record what the tooltip says */
	function selftest(charts) {
		for (var c = 0; c < charts.length; c++) {
			var ch = charts[c];
			for (var d = 0; d < ch.data.datasets.length; d++) {
				if (ch.data.datasets[d].kvsRef) continue;
				var els = ch.getDatasetMeta(d).data;
				for (var k = Math.floor(els.length / 2); k < els.length; k++) {
					var el = els[k];
					if (!isFinite(el.x) || !isFinite(el.y) || el.skip) continue;
					var r = ch.canvas.getBoundingClientRect();
					var ev = new MouseEvent('mousemove', {
						clientX: r.left + el.x, clientY: r.top + el.y, bubbles: true
					});
					ch.canvas.dispatchEvent(ev);
					var raw = ch.data.datasets[d].data[k];
					var sp = ch.kvsSpec, want = ch.data.datasets[d].label + ': ' + (sp.tip === 'cdf' ?
						fmt(raw.x, sp.x.fmt, sp.x.unit) :
						fmt(raw && typeof raw === 'object' ? raw.y : raw, sp.y.fmt, sp.y.unit));
					var b = document.body;
					b.setAttribute('data-hover-chart', ch.canvas.closest('figure').id);
					b.setAttribute('data-hover-series', String(ch.kvsSeries[d]));
					b.setAttribute('data-hover-index', String(k));
					b.setAttribute('data-hover-expect', want);
					/* Chart.js handles mouse events on the next animation frame */
					var tries = 0;
					(function read() {
						var tt = ch.tooltip, lines = [];
						(tt && tt.body || []).forEach(function (x) { lines = lines.concat(x.lines); });
						if (!lines.length && ++tries < 40) {
							setTimeout(read, 25);
							return;
						}
						b.setAttribute('data-hover-title', (tt && tt.title || []).join(' '));
						b.setAttribute('data-hover', lines.join(' | '));
						b.setAttribute('data-hover-visible', String(tt ? tt.opacity : 0));
					})();
					return;
				}
			}
		}
	}

	/* drag across the first zoomable chart, then double-click: record the x
	 * range before, zoomed and reset as data-zoom */
	function zoomtest(charts) {
		for (var c = 0; c < charts.length; c++) {
			var ch = charts[c];
			if (!ch.kvsSpec.zoom) continue;
			var cv = ch.canvas, r = cv.getBoundingClientRect(), ca = ch.chartArea;
			var y = r.top + (ca.top + ca.bottom) / 2;
			var x0 = r.left + ca.left + (ca.right - ca.left) * 0.25;
			var x1 = r.left + ca.left + (ca.right - ca.left) * 0.5;
			var range = function () { return [ch.scales.x.min, ch.scales.x.max]; };
			var before = range();
			cv.dispatchEvent(new MouseEvent('mousedown', { clientX: x0, clientY: y, bubbles: true }));
			cv.dispatchEvent(new MouseEvent('mousemove', { clientX: x1, clientY: y, bubbles: true }));
			window.dispatchEvent(new MouseEvent('mouseup', { clientX: x1, clientY: y, bubbles: true }));
			var zoomed = range();
			cv.dispatchEvent(new MouseEvent('dblclick', { clientX: x1, clientY: y, bubbles: true }));
			document.body.setAttribute('data-zoom', JSON.stringify({
				chart: cv.closest('figure').id, before: before, zoomed: zoomed, reset: range()
			}));
			return;
		}
	}

	function start() {
		var specs = document.querySelectorAll('script.kvs-chart');
		var charts = [], ok = 0;
		document.body.setAttribute('data-charts', String(specs.length));
		document.body.setAttribute('data-theme', dark ? 'dark' : 'light');
		if (typeof Chart === 'undefined') {
			/* a build without the chart library: the static images stand in */
			document.body.setAttribute('data-chart-library', 'none');
		} else {
			Chart.defaults.font.family = "'DejaVu Sans', system-ui, sans-serif";
			Chart.defaults.color = INK;
			for (var i = 0; i < specs.length; i++) {
				var fig = specs[i].closest('figure');
				try {
					var spec = JSON.parse(specs[i].textContent);
					var ch = draw(spec, fig);
					ch.kvsSpec = spec;
					ch.kvsSeries = spec.series.map(function (x, j) { return j; });
					charts.push(ch);
					var want = 0;
					spec.series.forEach(function (s) { if (!s.ref) want += s.data.length / 2; });
					if (want > 0 && Number(fig.getAttribute('data-points')) === want) ok++;
					else errors.push(fig.id + ': drew ' + fig.getAttribute('data-points') + ' of ' + want + ' points');
				} catch (e) {
					errors.push((fig ? fig.id : 'chart ' + i) + ': ' + e.message);
					if (fig) fig.classList.add('broken');
				}
			}
		}
		document.body.setAttribute('data-charts-ok', String(ok));
		mark();
		if (/#selftest/.test(window.location.href) && charts.length) {
			zoomtest(charts);
			selftest(charts);
		}
	}

	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', start);
	else
		start();
	window.addEventListener('load', imageCheck);
})();
