//! Charts as inline SVG, drawn in Rust: the HTML report needs no script to
//! show them and tests can read every coordinate. Axes with "nice" ticks,
//! line/dot/bar series, labelled marks and guides; colours come from CSS
//! classes so the page's stylesheet (and dark mode) decides them.

use crate::escape::html;
use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 340.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 46.0;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Style {
    Line,
    Dots,
    LineDots,
    /// Bars from zero, each `width` x-units wide starting at its x.
    Bars {
        width: f64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub style: Style,
    /// Style slot, or [`Series::INK`]: slots 0..=5 are the six colours
    /// drawn solid, and each further six the same colours in another line
    /// pattern (dotted, then dash-dotted), so [`STYLES`] slots all differ.
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    /// A tooltip per point (dots only).
    pub tips: Vec<String>,
    /// Which points miss the SLO (dots only), each drawn hollow and the
    /// legend saying so; empty where none does (or none is judged).
    pub misses: Vec<bool>,
    /// Which points are not steady (dots only: a plan's point whose run
    /// measured no steady state, its figures a burst's), each drawn faint
    /// with a dotted outline and the legend saying so; empty where none is.
    pub unsteady: Vec<bool>,
    pub dashed: bool,
    /// Drawn secondary: fainter and smaller dots, a thinner line (a plan's
    /// configurations off the frontier, under those on it).
    pub faint: bool,
    /// Named in the legend (where the chart's own entries say what its
    /// colours are, its series by the dozen need not be). A series with no
    /// point that is named is a legend entry alone.
    pub legend: bool,
}

/// How many series styles differ from each other: six colours, each solid,
/// dotted and dash-dotted. Slots past these repeat them.
pub const STYLES: usize = 18;

/// The CSS classes of style slot `color` (see [`Series::color`]), `dashed`
/// adding the dashed pattern: `c0`..`c5` the colour, `c6` the ink, and `v1`
/// or `v2` the pattern of the second and third six.
fn style_classes(color: usize, dashed: bool) -> String {
    let mut cls = if color == Series::INK {
        "c6".to_string()
    } else {
        match (color % STYLES) / 6 {
            0 => format!("c{}", color % 6),
            v => format!("c{} v{v}", color % 6),
        }
    };
    if dashed {
        cls.push_str(" dashed");
    }
    cls
}

/// The CSS class of a mark drawn in style slot `color`'s colour (`hue0`
/// to `hue5`, `hue6` the ink): its ring and leader in the colour, its
/// label in a shade of it that reads on the page (see [`Mark::color`]).
fn hue_class(color: usize) -> String {
    if color == Series::INK {
        "hue6".into()
    } else {
        format!("hue{}", color % 6)
    }
}

/// A legend's swatch for a series of style slot `color`: a short stretch of
/// its line, drawn by the same classes, so its colour, pattern and dashes
/// read as the chart's do.
pub fn swatch(color: usize, dashed: bool) -> String {
    format!(
        r#"<svg class="sw" viewBox="0 0 24 8" aria-hidden="true"><polyline class="line {}" points="1,4 23,4"/></svg>"#,
        style_classes(color, dashed)
    )
}

impl Series {
    /// The style slot drawn in the page's ink rather than one of the
    /// colours (a frontier through curves that take the others).
    pub const INK: usize = usize::MAX;

    /// The CSS classes the series is drawn with.
    fn classes(&self) -> String {
        let mut cls = style_classes(self.color, self.dashed);
        if self.faint {
            cls.push_str(" faint");
        }
        cls
    }

    /// Its legend's swatch: a faint dot for faint dots (points drawn
    /// secondary, with no line to show), else a stretch of its line.
    fn swatch(&self) -> String {
        if self.style == Style::Dots && self.faint {
            format!(
                r#"<svg class="sw" viewBox="0 0 24 8" aria-hidden="true"><circle class="pt {}" cx="12" cy="4" r="3"/></svg>"#,
                self.classes()
            )
        } else {
            swatch(self.color, self.dashed)
        }
    }

    pub fn new(name: impl Into<String>, style: Style, color: usize, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            style,
            color,
            points,
            tips: Vec::new(),
            misses: Vec::new(),
            unsteady: Vec::new(),
            dashed: false,
            faint: false,
            legend: true,
        }
    }
}

/// A labelled point drawn on top (saturation, recommended).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub label: String,
    /// CSS class of the ring (`mark-sat`, `mark-rec`).
    pub class: &'static str,
    /// A short key (a number) written beside the ring when its label has
    /// no room near it; the page lists the key with the label.
    pub key: Option<String>,
    /// The point misses the SLO: its ring is drawn dashed and muted, as its
    /// dot is hollow (a frontier's highest point may miss it).
    pub missed: bool,
    /// The point is not steady: its ring is dotted, as its dot is faint
    /// and dotted (a curve's last point, often its frontier point of most
    /// throughput, may be).
    pub unsteady: bool,
    /// The ring and its label in a series' colour (a style slot, or
    /// [`Series::INK`]) rather than the class's: a plan's frontier names
    /// each GPU type's points in that type's colour. `None`: the class's.
    pub color: Option<usize>,
}

/// A vertical line at `x` (an SLO limit) or, with `horizontal`, at y = `x`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Guide {
    pub at: f64,
    pub label: String,
    pub horizontal: bool,
    /// A boundary (where a stage starts), not a limit: a muted line, its
    /// label at the top of the plot, right of it.
    pub boundary: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// Stable id: `data-chart` in the page, what the browser test looks for.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
    pub guides: Vec<Guide>,
    /// Shaded x ranges with a label (warm-up).
    pub bands: Vec<(f64, f64, String)>,
    /// Y values are shares 0..=1, labelled as percentages, axis fixed to 0..=100%.
    pub y_share: bool,
    /// A line under the chart (how it was computed, what is missing).
    pub note: Option<String>,
}

/// Tick positions covering [lo, hi] with a step of 1, 2 or 5 × 10ⁿ, about
/// `target` of them: of the steps near `span / target`, the one whose axis
/// runs least past the data (as a share of its span), a tick count far
/// from the target counting against it. A 61 s run ends its axis at 70 s,
/// not at 80 s.
///
/// ```
/// let (ticks, step) = goodput_report::svg::nice_ticks(0.0, 97.0, 5);
/// assert_eq!(step, 20.0);
/// assert_eq!(ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
/// let (ticks, step) = goodput_report::svg::nice_ticks(0.0, 61.0, 6);
/// assert_eq!((step, ticks.last().copied()), (10.0, Some(70.0)));
/// ```
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let span = (hi - lo).abs().max(f64::EPSILON);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    let want = target.max(1) as f64;
    let mag = 10f64.powf((span / want).log10().floor());
    let mut best: Option<(f64, f64)> = None;
    // From the widest step down: a narrower one must score strictly better,
    // so a tie keeps the fewer ticks.
    for m in [200.0, 100.0, 50.0, 20.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1] {
        let step = m * mag / 10.0;
        let n = (hi / step).ceil() - (lo / step).floor();
        if !(1.0..=2.0 * want).contains(&n) {
            continue;
        }
        let score = (n * step - span) / span + 0.1 * (n - want).abs() / want;
        if best.is_none_or(|(s, _)| score < s - 1e-9) {
            best = Some((score, step));
        }
    }
    let step = best.map_or(mag, |b| b.1);
    let first = (lo / step).floor();
    let last = (hi / step).ceil().max(first + 1.0);
    let ticks = (0..=((last - first) as usize)).map(|i| clean((first + i as f64) * step)).collect();
    (ticks, step)
}

/// Removes float dust (0.30000000000000004) from tick values.
fn clean(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// The labels of an axis's ticks, `step` apart: shares as percentages;
/// numbers of five digits or more in thousands (`k`), millions (`M`),
/// billions (`G`) or trillions (`T`), by the largest tick, so one axis
/// counts in one unit; beyond those, in exponent form. Each label has as
/// many decimals as the step needs, and zero is `0`.
fn tick_labels(ticks: &[f64], step: f64, share: bool) -> Vec<String> {
    if share {
        return ticks.iter().map(|v| format!("{:.0}%", v * 100.0)).collect();
    }
    let top = ticks.iter().fold(0f64, |m, v| m.max(v.abs()));
    if top >= 1e15 {
        return ticks.iter().map(|&v| if v == 0.0 { "0".into() } else { format!("{v:.1e}") }).collect();
    }
    let (scale, suffix) = match top {
        t if t >= 1e12 => (1e12, "T"),
        t if t >= 1e9 => (1e9, "G"),
        t if t >= 1e6 => (1e6, "M"),
        t if t >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    // Steps are 1, 2 or 5 × 10ⁿ: the step's own decimals show every tick.
    let decimals = (-((step / scale).log10() + 1e-9).floor()).max(0.0) as usize;
    ticks.iter().map(|&v| if v == 0.0 { "0".into() } else { format!("{:.decimals$}{suffix}", v / scale) }).collect()
}

/// Coordinates to two decimals: plenty for a 640-unit canvas, and stable
/// text for tests.
fn c(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == r.trunc() {
        format!("{r:.0}")
    } else {
        format!("{r}")
    }
}

impl Chart {
    fn finite_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series.iter().flat_map(|s| s.points.iter().copied()).filter(|(x, y)| x.is_finite() && y.is_finite())
    }

    /// How many data points the chart draws (what `data-points` says): a
    /// series of more points than the plot has pixel columns is drawn thinned.
    pub fn point_count(&self) -> usize {
        self.layout().map_or(0, |l| l.series.iter().map(|s| s.points.len()).sum())
    }

    /// The frame, the axes' ticks and the series as drawn; `None` when no
    /// series has a point to draw.
    fn layout(&self) -> Option<Layout> {
        self.finite_points().next()?;
        let ((x0, x1), (y0, y1)) = self.domain();
        let pw = W - LEFT - RIGHT;
        let x = axis_ticks(x0, x1, 6, false, pw);
        let y = if self.y_share {
            axis_ticks(0.0, 1.0, 5, true, f64::INFINITY)
        } else {
            axis_ticks(y0, y1, 5, false, f64::INFINITY)
        };
        let (x0, x1) = (x.ticks[0].min(x0), x.ticks[x.ticks.len() - 1].max(x1));
        let (y0, y1) = (y.ticks[0].min(y0), y.ticks[y.ticks.len() - 1].max(y1));
        let frame = Frame { x0, x1, y0, y1, pw, ph: H - TOP - BOTTOM };
        let series = self.series.iter().map(|s| thinned(s, &frame)).collect();
        Some(Layout { frame, x, y, series })
    }

    fn domain(&self) -> ((f64, f64), (f64, f64)) {
        let mut xs: Vec<f64> = self.finite_points().map(|p| p.0).collect();
        let mut ys: Vec<f64> = self.finite_points().map(|p| p.1).collect();
        for s in &self.series {
            if let Style::Bars { width } = s.style {
                xs.extend(s.points.iter().map(|p| p.0 + width).filter(|x| x.is_finite()));
            }
        }
        xs.extend(self.marks.iter().map(|m| m.x));
        ys.extend(self.marks.iter().map(|m| m.y));
        for g in &self.guides {
            if g.horizontal {
                ys.push(g.at);
            } else {
                xs.push(g.at);
            }
        }
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                (0.0, 1.0)
            } else if hi - lo < 1e-12 {
                // A flat series is padded either side, but a quantity
                // that is not negative never below zero.
                let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
                (if lo >= 0.0 { (lo - pad).max(0.0) } else { lo - pad }, hi + pad)
            } else {
                (lo, hi)
            }
        };
        let (mut x0, x1) = range(&xs);
        let (mut y0, y1) = range(&ys);
        // Quantities on these charts are never negative; starting at zero
        // keeps differences honest.
        if x0 > 0.0 && x0 < (x1 - x0) * 0.5 {
            x0 = 0.0;
        }
        if y0 >= 0.0 {
            y0 = 0.0;
        }
        if self.y_share {
            return ((x0, x1), (0.0, 1.0));
        }
        ((x0, x1), (y0, y1))
    }

    /// The chart as a `<figure>` holding its title, the SVG, a legend and
    /// the note.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let layout = self.layout();
        let n = layout.as_ref().map_or(0, |l| l.series.iter().map(|s| s.points.len()).sum());
        let _ = write!(
            o,
            r#"<figure class="chart{}" id="chart-{id}" data-chart="{id}" data-points="{n}"><figcaption>{}</figcaption>"#,
            if n == 0 { " empty" } else { "" },
            html(&self.title),
            id = html(&self.id),
        );
        let mut notes: Vec<String> = self.note.iter().cloned().collect();
        match &layout {
            Some(l) if n > 0 => {
                self.svg(&mut o, l);
                o.push_str(r#"<div class="legend">"#);
                for s in self.series.iter().filter(|s| s.legend) {
                    let _ = write!(o, r#"<span>{}{}</span>"#, s.swatch(), html(&s.name));
                }
                // A ring labelled with a series' own name (a plan's
                // configuration at its frontier point) is told by its label
                // on the chart: a second legend entry of the same name had
                // read as another series.
                for m in self.marks.iter().filter(|m| !self.series.iter().any(|s| s.name == m.label)) {
                    let miss = if m.missed { " miss" } else { "" };
                    let unsteady = if m.unsteady { " unsteady" } else { "" };
                    let hue = m.color.map(|c| format!(" {}", hue_class(c))).unwrap_or_default();
                    let _ = write!(
                        o,
                        r#"<span><i class="sw ring {}{hue}{miss}{unsteady}"></i>{}</span>"#,
                        m.class,
                        html(&m.label)
                    );
                }
                // Points that miss the SLO are drawn hollow (their rings
                // dashed), points not steady faint and dotted: the legend
                // says what each means.
                if l.series.iter().any(|s| s.misses.contains(&true)) || self.marks.iter().any(|m| m.missed) {
                    o.push_str(MISSES_LEGEND);
                }
                if l.series.iter().any(|s| s.unsteady.contains(&true)) || self.marks.iter().any(|m| m.unsteady) {
                    o.push_str(UNSTEADY_LEGEND);
                }
                o.push_str("</div>");
                if self.series.iter().zip(&l.series).any(|(a, b)| b.points.len() < a.points.len()) {
                    notes.push(THINNED.into());
                }
            }
            _ => o.push_str(r#"<p class="nodata">No data to draw.</p>"#),
        }
        if !notes.is_empty() {
            let _ = write!(o, r#"<p class="note">{}</p>"#, html(&notes.join(" ")));
        }
        o.push_str("</figure>");
        o
    }

    fn svg(&self, o: &mut String, l: &Layout) {
        let f = &l.frame;
        let _ = write!(
            o,
            r#"<svg viewBox="0 0 {W} {H}" role="img" aria-label="{}" preserveAspectRatio="xMidYMid meet">"#,
            html(&self.title)
        );
        self.bands_svg(o, f);
        self.axes_svg(o, f, &l.x, &l.y);
        let _ = write!(o, r#"<g class="plot">"#);
        for (i, s) in l.series.iter().enumerate() {
            series_svg(o, f, i, s);
        }
        self.guides_svg(o, f);
        self.marks_svg(o, f, &l.series);
        o.push_str("</g></svg>");
    }

    /// Shaded spans of x (the warm-up), each with its label.
    fn bands_svg(&self, o: &mut String, f: &Frame) {
        for (a, b, label) in &self.bands {
            let (a, b) = (f.sx(a.max(f.x0)), f.sx(b.min(f.x1)));
            if b > a {
                let _ = write!(
                    o,
                    r#"<rect class="band" x="{}" y="{}" width="{}" height="{}"/><text class="band-label" x="{}" y="{}">{}</text>"#,
                    c(a),
                    c(TOP),
                    c(b - a),
                    c(f.ph),
                    c(a + 3.0),
                    c(TOP + 11.0),
                    html(label)
                );
            }
        }
    }

    /// The grid, the axes, their ticks and labels. An x label that would
    /// run past the canvas's right edge ends at it instead.
    fn axes_svg(&self, o: &mut String, f: &Frame, x: &Ticks, y: &Ticks) {
        o.push_str(r#"<g class="grid">"#);
        for &t in &y.ticks {
            let _ = write!(o, r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}"/>"#, c(LEFT), c(LEFT + f.pw), y = c(f.sy(t)));
        }
        for &t in &x.ticks {
            let _ = write!(o, r#"<line y1="{}" y2="{}" x1="{x}" x2="{x}"/>"#, c(TOP), c(TOP + f.ph), x = c(f.sx(t)));
        }
        o.push_str("</g><g class=\"axis\">");
        let _ = write!(
            o,
            r#"<line x1="{l}" x2="{l}" y1="{t}" y2="{b}"/><line x1="{l}" x2="{r}" y1="{b}" y2="{b}"/>"#,
            l = c(LEFT),
            r = c(LEFT + f.pw),
            t = c(TOP),
            b = c(TOP + f.ph)
        );
        for (&t, label) in y.ticks.iter().zip(&y.labels) {
            let _ = write!(o, r#"<text class="yt" x="{}" y="{}">{label}</text>"#, c(LEFT - 6.0), c(f.sy(t) + 3.5));
        }
        for (&t, label) in x.ticks.iter().zip(&x.labels) {
            let (at, half) = (f.sx(t), tick_text_px(label) / 2.0);
            if at + half > W - 2.0 {
                let _ = write!(
                    o,
                    r#"<text class="xt" text-anchor="end" x="{}" y="{}">{label}</text>"#,
                    c((at + half).min(W - 2.0)),
                    c(TOP + f.ph + 15.0)
                );
            } else {
                let _ = write!(o, r#"<text class="xt" x="{}" y="{}">{label}</text>"#, c(at), c(TOP + f.ph + 15.0));
            }
        }
        let _ = write!(
            o,
            r#"<text class="xl" x="{}" y="{}">{}</text><text class="yl" transform="translate(14 {}) rotate(-90)">{}</text></g>"#,
            c(LEFT + f.pw / 2.0),
            c(H - 8.0),
            html(&self.x_label),
            c(TOP + f.ph / 2.0),
            html(&self.y_label)
        );
    }

    /// Limit and objective lines, across or along the plot, and boundaries.
    fn guides_svg(&self, o: &mut String, f: &Frame) {
        // Boundaries label the top line of the plot: a limit's label that
        // would fall there goes under its line instead.
        let top_taken = self.guides.iter().any(|g| g.boundary && !g.horizontal);
        // Limits along the plot label its foot, each a line above the one
        // before: a limit and an objective close together stay readable.
        let mut foot = 0.0;
        for g in &self.guides {
            if g.horizontal {
                let above = f.sy(g.at) - 4.0;
                let label_y = if top_taken && above - 11.0 < TOP + 14.0 {
                    (f.sy(g.at) + 12.0).max(TOP + 14.0 + 11.0)
                } else {
                    above
                };
                let y = c(f.sy(g.at));
                let _ = write!(
                    o,
                    r#"<line class="guide" x1="{}" x2="{}" y1="{y}" y2="{y}"/><text class="guide-label" text-anchor="start" x="{}" y="{}">{}</text>"#,
                    c(LEFT),
                    c(LEFT + f.pw),
                    // At the left end: latency curves climb at the right.
                    c(LEFT + 4.0),
                    c(label_y),
                    html(&g.label)
                );
            } else if g.boundary {
                let x = c(f.sx(g.at));
                let _ = write!(
                    o,
                    r#"<line class="guide boundary" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="guide-label boundary" text-anchor="start" x="{}" y="{}">{}</text>"#,
                    c(TOP),
                    c(TOP + f.ph),
                    c(f.sx(g.at) + 4.0),
                    c(TOP + 11.0),
                    html(&g.label)
                );
            } else {
                let x = f.sx(g.at);
                let anchor = if x > LEFT + f.pw * 0.8 { "end" } else { "start" };
                let dx = if anchor == "end" { -4.0 } else { 4.0 };
                let _ = write!(
                    o,
                    r#"<line class="guide" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="guide-label" text-anchor="{anchor}" x="{}" y="{}">{}</text>"#,
                    c(TOP),
                    c(TOP + f.ph),
                    c(x + dx),
                    c(TOP + f.ph - 6.0 - foot),
                    html(&g.label),
                    x = c(x)
                );
                foot += LINE_PX;
            }
        }
    }

    /// Ringed points with their labels, each label placed where it covers
    /// neither a ring (its own point's or another's: a saturation label
    /// once hid the recommended point beside it) nor a label placed before
    /// it, and, where such a place is near, no series' line or dot either:
    /// of the places beside its point, right or left, a line higher or
    /// lower at a time, and centred above or below it, the nearest. A label
    /// that is not beside its ring is joined to it by a thin leader line,
    /// so it reads as its own point's, not its neighbour's. The recommended
    /// mark (`mark-rec`) takes its place first and is drawn last, over the
    /// others. A label with no free place (a crowded chart, as a plan's
    /// frontier of many configurations can be) is left off rather than
    /// written over another: its ring keeps the label as its tooltip, and
    /// the page's table lists every configuration.
    fn marks_svg(&self, o: &mut String, f: &Frame, series: &[Series]) {
        let (places, keyed) = self.place_marks(f, series);
        let draw = (0..self.marks.len()).filter(|&i| self.marks[i].class != "mark-rec");
        for i in draw.chain((0..self.marks.len()).filter(|&i| self.marks[i].class == "mark-rec")) {
            let m = &self.marks[i];
            let (x, y) = (f.sx(m.x), f.sy(m.y));
            let t = html(&m.label);
            let _ = write!(
                o,
                r#"<g class="mark {cls}{hue}{miss}{unsteady}"><circle cx="{}" cy="{}" r="{MARK_R}"><title>{t}</title></circle>"#,
                c(x),
                c(y),
                cls = m.class,
                hue = m.color.map(|c| format!(" {}", hue_class(c))).unwrap_or_default(),
                miss = if m.missed { " miss" } else { "" },
                unsteady = if m.unsteady { " unsteady" } else { "" },
            );
            if let Some(r) = places[i] {
                if let Some((a, b)) = leader(x, y, &r) {
                    let _ = write!(
                        o,
                        r#"<line class="leader" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
                        c(a.0),
                        c(a.1),
                        c(b.0),
                        c(b.1)
                    );
                }
                let text = match (&m.key, keyed[i]) {
                    (Some(k), true) => html(k),
                    _ => t,
                };
                let _ = write!(o, r#"<text x="{}" y="{}">{text}</text>"#, c(r.left), c(r.bottom - LABEL_DESCENT));
            }
            o.push_str("</g>");
        }
    }

    /// Which marks the chart labels by their key (a number beside the ring,
    /// where the label had no room), in the order of [`Chart::marks`]: what
    /// a page's table may refer to. None when there is nothing to draw.
    pub fn keyed_marks(&self) -> Vec<bool> {
        match self.layout() {
            Some(l) if l.series.iter().any(|s| !s.points.is_empty()) => self.place_marks(&l.frame, &l.series).1,
            _ => vec![false; self.marks.len()],
        }
    }

    /// Where [`Chart::marks_svg`] writes each mark's label (`None`: left
    /// off), and whether it writes the mark's key there instead.
    fn place_marks(&self, f: &Frame, series: &[Series]) -> (Vec<Option<Rect>>, Vec<bool>) {
        let rings: Vec<Rect> = self.marks.iter().map(|m| Rect::ring(f.sx(m.x), f.sy(m.y))).collect();
        let (lines, dots) = obstacles(f, series);
        let mut order: Vec<usize> = (0..self.marks.len()).collect();
        order.sort_by_key(|&i| self.marks[i].class != "mark-rec");
        let mut placed: Vec<Rect> = Vec::new();
        let mut leaders: Vec<Segment> = Vec::new();
        // Each label's box, where it has one; its text starts at the box's left.
        let mut places: Vec<Option<Rect>> = vec![None; self.marks.len()];
        // Which marks are labelled by their key.
        let mut keyed: Vec<bool> = vec![false; self.marks.len()];
        for &i in &order {
            let m = &self.marks[i];
            let (x, y) = (f.sx(m.x), f.sy(m.y));
            let width = LABEL_CHAR_PX * m.label.chars().count() as f64;
            // Inside the plot, over no ring, label or leader, and its own
            // leader, if it needs one, through no other ring or label.
            let free = |r: &Rect| {
                r.left >= LEFT
                    && r.right <= LEFT + f.pw
                    && r.top >= TOP - 2.0
                    && r.bottom <= TOP + f.ph
                    && !rings.iter().chain(&placed).any(|o| o.crosses(r))
                    && !leaders.iter().any(|&(a, b)| r.crosses_segment(a, b))
            };
            let fits = |r: &Rect| {
                free(r)
                    && leader(x, y, r).is_none_or(|(a, b)| {
                        !placed.iter().any(|o| o.crosses_segment(a, b))
                            && !rings.iter().enumerate().any(|(k, o)| k != i && o.crosses_segment(a, b))
                    })
            };
            let clear =
                |r: &Rect| !dots.iter().any(|d| d.crosses(r)) && !lines.iter().any(|&(a, b)| r.crosses_segment(a, b));
            let right_first = x <= LEFT + f.pw * 0.7;
            // A mark with a key keeps its label within a line of its ring,
            // else takes its key there: a label lines away over other
            // curves read as theirs.
            let lines = if m.key.is_some() { 1 } else { LABEL_LINES };
            let nearest = |candidates: &[Rect]| {
                candidates.iter().find(|r| fits(r) && clear(r)).or_else(|| candidates.iter().find(|r| fits(r))).copied()
            };
            let mut found = nearest(&label_places(x, y, width, right_first, lines));
            if let (None, Some(key)) = (found, &m.key) {
                let width = LABEL_CHAR_PX * key.chars().count() as f64;
                found = nearest(&label_places(x, y, width, right_first, 2));
                keyed[i] = found.is_some();
            }
            if m.class == "mark-rec" {
                // The recommended mark is labelled wherever it must be: a
                // line above or below its point, slid along to lie inside
                // the plot, further than the places tried above (its leader
                // over other rings if it must), else beside its point over
                // whatever is there.
                let slid = |base: f64| {
                    let left = (x - width / 2.0).clamp(LEFT, (W - width).max(LEFT));
                    Rect { left, right: left + width, top: base - LABEL_ASCENT, bottom: base + LABEL_DESCENT }
                };
                let above = (1..=12).map(|k| y - 10.0 - LINE_PX * k as f64);
                let below = (0..=8).map(|k| y + 20.0 + LINE_PX * k as f64);
                let slid_places: Vec<Rect> = above.chain(below).map(slid).collect();
                found = found
                    .or_else(|| slid_places.iter().find(|r| fits(r)).copied())
                    .or_else(|| slid_places.iter().find(|r| free(r)).copied())
                    .or_else(|| {
                        let base = (y - 10.0).max(TOP + LABEL_ASCENT);
                        let left = if x <= LEFT + f.pw * 0.7 { x + LABEL_GAP } else { x - LABEL_GAP - width };
                        Some(Rect { left, right: left + width, top: base - LABEL_ASCENT, bottom: base + LABEL_DESCENT })
                    });
            }
            if let Some(r) = found {
                placed.push(r);
                leaders.extend(leader(x, y, &r));
            }
            places[i] = found;
        }
        (places, keyed)
    }
}

/// Where a mark at (x, y) may have its label `width` px wide, nearest
/// first: beside the point (on the side `right_first` says first, then the
/// other), then a line higher or lower at a time, or centred above or
/// below it; at most `lines` lines away.
fn label_places(x: f64, y: f64, width: f64, right_first: bool, lines: usize) -> Vec<Rect> {
    let at = |left: f64, base: f64| Rect {
        left,
        right: left + width,
        top: base - LABEL_ASCENT,
        bottom: base + LABEL_DESCENT,
    };
    let side = |right: bool| if right { x + LABEL_GAP } else { x - LABEL_GAP - width };
    // (how far, the box): a label's middle is `LABEL_ASCENT - LABEL_DESCENT`
    // over 2 above its baseline, so beside the point its baseline is below it.
    let middle = (LABEL_ASCENT - LABEL_DESCENT) / 2.0;
    let mut places: Vec<(f64, Rect)> = Vec::new();
    for k in 0..=lines {
        let dy = LINE_PX * k as f64;
        for base in if k == 0 { vec![y + middle] } else { vec![y + middle - dy, y + middle + dy] } {
            places.push((dy, at(side(right_first), base)));
            places.push((dy + 4.0, at(side(!right_first), base)));
        }
        // Centred over or under the point, clear of its ring.
        let over = y - MARK_R - 3.0 - LABEL_DESCENT - dy;
        let under = y + MARK_R + 3.0 + LABEL_ASCENT + dy;
        places.push((dy + 8.0, at(x - width / 2.0, over)));
        places.push((dy + 8.0, at(x - width / 2.0, under)));
    }
    places.sort_by(|a, b| a.0.total_cmp(&b.0));
    places.into_iter().map(|p| p.1).collect()
}

/// A stretch of line on the canvas, from one point to another, px.
type Segment = ((f64, f64), (f64, f64));

/// The leader line of a mark at (x, y) whose label is in `label`: from the
/// ring's edge to the label's nearest point; `None` when the label is beside
/// the ring (within [`LEADER_AFTER`] of it).
fn leader(x: f64, y: f64, label: &Rect) -> Option<Segment> {
    let (px, py) = (x.clamp(label.left, label.right), y.clamp(label.top, label.bottom));
    let far = (px - x).hypot(py - y);
    if label.crosses(&Rect::ring(x, y).grown(LEADER_AFTER)) || far <= MARK_R + LEADER_AFTER {
        return None;
    }
    let (ux, uy) = ((px - x) / far, (py - y) / far);
    Some(((x + ux * (MARK_R + 1.5), y + uy * (MARK_R + 1.5)), (px, py)))
}

/// What a label should not be written over, in px: each line's segments
/// and each dot's box.
fn obstacles(f: &Frame, series: &[Series]) -> (Vec<Segment>, Vec<Rect>) {
    let (mut lines, mut dots) = (Vec::new(), Vec::new());
    for s in series {
        let px: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (f.sx(x), f.sy(y))).collect();
        if matches!(s.style, Style::Line | Style::LineDots) {
            lines.extend(px.windows(2).map(|w| (w[0], w[1])));
        }
        if matches!(s.style, Style::Dots | Style::LineDots) {
            dots.extend(px.iter().map(|&(x, y)| Rect { left: x - 3.0, right: x + 3.0, top: y - 3.0, bottom: y + 3.0 }));
        }
    }
    (lines, dots)
}

/// What a chart draws, placed: the frame, the axes' ticks and the series,
/// thinned to the plot's width.
struct Layout {
    frame: Frame,
    x: Ticks,
    y: Ticks,
    series: Vec<Series>,
}

/// An axis's ticks and their labels.
struct Ticks {
    ticks: Vec<f64>,
    labels: Vec<String>,
}

/// How wide an axis's tick label is drawn, in px (11 px sans-serif; a digit
/// is at most 0.64 em in the common faces).
const TICK_CHAR_PX: f64 = 7.0;

fn tick_text_px(label: &str) -> f64 {
    TICK_CHAR_PX * label.chars().count() as f64
}

/// Ticks over [lo, hi], about `target` of them, with their labels; along
/// an axis `length` px long (`INFINITY` for one whose labels are stacked,
/// not side by side), fewer where their labels would crowd: neighbouring
/// labels keep more than half the widest one's width between them.
fn axis_ticks(lo: f64, hi: f64, target: usize, share: bool, length: f64) -> Ticks {
    let mut last = None;
    for want in (2..=target.max(2)).rev() {
        let (ticks, step) = nice_ticks(lo, hi, want);
        let labels = tick_labels(&ticks, step, share);
        let widest = labels.iter().map(|l| tick_text_px(l)).fold(0.0, f64::max);
        let apart = length / (ticks.len().max(2) - 1) as f64;
        if apart >= 1.6 * widest {
            return Ticks { ticks, labels };
        }
        last = Some(Ticks { ticks, labels });
    }
    last.expect("at least one target")
}

/// The legend's entry for points that miss the SLO: a hollow dot, in ink.
const MISSES_LEGEND: &str = concat!(
    r#"<span class="misses"><svg class="sw" viewBox="0 0 24 8" aria-hidden="true">"#,
    r#"<circle class="pt c6 miss" cx="12" cy="4" r="3"/></svg>misses the SLO</span>"#
);

/// The legend's entry for points not steady: a faint dot with a dotted
/// outline, in ink.
const UNSTEADY_LEGEND: &str = concat!(
    r#"<span class="unsteady"><svg class="sw" viewBox="0 0 24 8" aria-hidden="true">"#,
    r#"<circle class="pt c6 unsteady" cx="12" cy="4" r="3"/></svg>not steady (a burst's figures)</span>"#
);

/// A sentence for a chart's note when a series was thinned to its width.
const THINNED: &str = "Drawn at the chart's width: where there are more points than pixel columns, each column's \
     bars are drawn as one (their mean), a line through each column's first, lowest, highest and last points, and \
     dots at one place once.";

/// `s` as drawn on `f`: its finite points, about one element per pixel
/// column of the plot at most. Bars more than the columns are merged,
/// `k` neighbours into one bar `k` times as wide of their mean height (a
/// rate over the wider bucket); a line of more than two points a column
/// keeps, of each column's run of points, the first, the lowest, the
/// highest and the last, so its shape is the same at this width; dots
/// more than the columns are drawn once a pixel. Fewer are left as they are.
fn thinned(s: &Series, f: &Frame) -> Series {
    // Each finite point's place in `s.points`, where its tip is.
    let at: Vec<usize> =
        (0..s.points.len()).filter(|&i| s.points[i].0.is_finite() && s.points[i].1.is_finite()).collect();
    let pts: Vec<(f64, f64)> = at.iter().map(|&i| s.points[i]).collect();
    let tip = |k: usize| s.tips.get(at[k]).cloned();
    let miss = |k: usize| s.misses.get(at[k]).copied();
    let unsteady = |k: usize| s.unsteady.get(at[k]).copied();
    let columns = f.pw.floor().max(1.0) as usize;
    let mut out =
        Series { points: Vec::new(), tips: Vec::new(), misses: Vec::new(), unsteady: Vec::new(), ..s.clone() };
    match s.style {
        Style::Bars { width } if pts.len() > columns => {
            let k = pts.len().div_ceil(columns);
            out.style = Style::Bars { width: width * k as f64 };
            out.points = pts.chunks(k).map(|g| (g[0].0, g.iter().map(|p| p.1).sum::<f64>() / g.len() as f64)).collect();
        }
        Style::Line | Style::LineDots if pts.len() > 2 * columns => {
            let column = |x: f64| f.sx(x).floor() as i64;
            let mut i = 0;
            while i < pts.len() {
                let mut j = i;
                while j + 1 < pts.len() && column(pts[j + 1].0) == column(pts[i].0) {
                    j += 1;
                }
                let run = i..=j;
                let lo = run.clone().min_by(|&a, &b| pts[a].1.total_cmp(&pts[b].1)).unwrap_or(i);
                let hi = run.clone().max_by(|&a, &b| pts[a].1.total_cmp(&pts[b].1)).unwrap_or(i);
                let mut keep = vec![i, lo, hi, j];
                keep.sort_unstable();
                keep.dedup();
                for k in keep {
                    out.points.push(pts[k]);
                    out.tips.extend(tip(k));
                    out.misses.extend(miss(k));
                    out.unsteady.extend(unsteady(k));
                }
                i = j + 1;
            }
        }
        Style::Dots if pts.len() > columns => {
            let mut seen = std::collections::HashSet::new();
            for (k, &(x, y)) in pts.iter().enumerate() {
                if seen.insert((f.sx(x).round() as i64, f.sy(y).round() as i64)) {
                    out.points.push((x, y));
                    out.tips.extend(tip(k));
                    out.misses.extend(miss(k));
                    out.unsteady.extend(unsteady(k));
                }
            }
        }
        _ => {
            out.tips = (0..pts.len()).filter_map(tip).collect();
            out.misses = (0..pts.len()).filter_map(miss).collect();
            out.unsteady = (0..pts.len()).filter_map(unsteady).collect();
            out.points = pts;
        }
    }
    out
}

/// A box on the canvas: a mark's ring or a label's text.
#[derive(Debug, Clone, Copy)]
struct Rect {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Rect {
    /// The box a ring of [`MARK_R`] at (x, y) covers, its stroke included.
    fn ring(x: f64, y: f64) -> Rect {
        let r = MARK_R + 1.5;
        Rect { left: x - r, right: x + r, top: y - r, bottom: y + r }
    }

    fn crosses(&self, o: &Rect) -> bool {
        self.left < o.right && o.left < self.right && self.top < o.bottom && o.top < self.bottom
    }

    /// The box `by` px wider on every side.
    fn grown(&self, by: f64) -> Rect {
        Rect { left: self.left - by, right: self.right + by, top: self.top - by, bottom: self.bottom + by }
    }

    /// Whether the segment from `a` to `b` passes through the box (clipped
    /// to it, Liang–Barsky: some stretch of it is left).
    fn crosses_segment(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0f64, 1f64);
        for (p, q) in [(-dx, a.0 - self.left), (dx, self.right - a.0), (-dy, a.1 - self.top), (dy, self.bottom - a.1)] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let t = q / p;
                if p < 0.0 {
                    t0 = t0.max(t);
                } else {
                    t1 = t1.min(t);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// The plot area inside the margins, and the scales from data to it.
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    /// Width and height of the plot area.
    pw: f64,
    ph: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x - self.x0) / (self.x1 - self.x0) * self.pw
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + self.ph - (y - self.y0) / (self.y1 - self.y0) * self.ph
    }
}

/// One series as [`thinned`] gives it: bars, a line, dots, or a line with
/// dots; a series with no point draws nothing.
fn series_svg(o: &mut String, f: &Frame, i: usize, s: &Series) {
    let pts = &s.points;
    if pts.is_empty() {
        return;
    }
    let cls = s.classes();
    let _ = write!(o, r#"<g class="series" data-series="{i}" data-n="{}">"#, pts.len());
    match s.style {
        Style::Bars { width } => {
            let bw = (f.sx(f.x0 + width) - f.sx(f.x0) - 1.0).max(1.0);
            for &(x, y) in pts {
                let (top, base) = (f.sy(y.max(f.y0)), f.sy(0f64.max(f.y0)));
                let _ = write!(
                    o,
                    r#"<rect class="bar {cls}" x="{}" y="{}" width="{}" height="{}"/>"#,
                    c(f.sx(x) + 0.5),
                    c(top.min(base)),
                    c(bw),
                    c((base - top).abs())
                );
            }
        }
        Style::Line | Style::LineDots | Style::Dots => {
            if s.style != Style::Dots {
                let coords: Vec<String> = pts.iter().map(|&(x, y)| format!("{},{}", c(f.sx(x)), c(f.sy(y)))).collect();
                let _ = write!(o, r#"<polyline class="line {cls}" points="{}"/>"#, coords.join(" "));
            }
            if s.style != Style::Line {
                let r = match (s.style == Style::Dots && pts.len() > 500, s.faint) {
                    (true, _) => 1.6,
                    (false, true) => 2.4,
                    (false, false) => 3.0,
                };
                for (k, &(x, y)) in pts.iter().enumerate() {
                    // A point that misses the SLO is hollow; one not
                    // steady faint, its outline dotted.
                    let miss = if s.misses.get(k) == Some(&true) { " miss" } else { "" };
                    let unsteady = if s.unsteady.get(k) == Some(&true) { " unsteady" } else { "" };
                    let _ = write!(
                        o,
                        r#"<circle class="pt {cls}{miss}{unsteady}" cx="{}" cy="{}" r="{r}">"#,
                        c(f.sx(x)),
                        c(f.sy(y))
                    );
                    if let Some(t) = s.tips.get(k) {
                        let _ = write!(o, "<title>{}</title>", html(t));
                    }
                    o.push_str("</circle>");
                }
            }
        }
    }
    o.push_str("</g>");
}

/// A mark label's line height and the width of one of its characters
/// (11.5 px bold sans-serif, a little generous), in px; how far its text
/// rises above its baseline and falls below it; how far it starts from its
/// point; the radius of a mark's ring.
const LINE_PX: f64 = 14.0;
/// A label character's width at the marks' 11.5 px, weight 650: Chromium's
/// sans-serif measured 7.10–7.28 (`getComputedTextLength`) over a plan's
/// configuration names.
const LABEL_CHAR_PX: f64 = 7.4;
const LABEL_ASCENT: f64 = 10.5;
const LABEL_DESCENT: f64 = 3.0;
const LABEL_GAP: f64 = 10.0;
const MARK_R: f64 = 8.0;
/// How many lines above or below its point a mark's label may go.
const LABEL_LINES: usize = 4;
/// How far from its ring, px, a label is no longer beside it and takes a
/// leader line.
const LEADER_AFTER: f64 = 3.0;

/// Points of a step function: each value holds until the next x, the last
/// for `last_width`.
pub fn steps(points: &[(f64, f64)], last_width: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        let next = points.get(i + 1).map_or(x + last_width, |p| p.0);
        out.push((x, y));
        out.push((next, y));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ticks_cover_the_range_with_round_steps() {
        for (lo, hi) in [(0.0, 1.0), (50.4, 52.4), (0.0, 1010.9), (2.44, 2.53), (0.0, 1e6), (-3.0, 7.0)] {
            let (t, step) = nice_ticks(lo, hi, 6);
            assert!(t[0] <= lo && *t.last().unwrap() >= hi, "{lo}..{hi}: {t:?}");
            let m = step / 10f64.powf(step.log10().floor());
            assert!([1.0, 2.0, 5.0, 10.0].iter().any(|x| (x - m).abs() < 1e-9), "{step}");
            assert!(t.len() <= 14, "{t:?}");
        }
        assert_eq!(tick_labels(&[0.0, 0.30000000000000004], 0.1, false), ["0", "0.3"]);
        assert_eq!(tick_labels(&[0.0, 20_000.0], 5000.0, false), ["0", "20k"]);
        assert_eq!(tick_labels(&[0.5], 0.1, true), ["50%"]);
    }

    /// Large values count in k, M, G or T by the axis's largest tick, never
    /// as "2500000k"; each with the decimals its step needs.
    #[test]
    fn large_tick_labels_take_a_unit_of_their_size() {
        assert_eq!(tick_labels(&[0.0, 5e5, 1e6, 1.5e6], 5e5, false), ["0", "0.5M", "1.0M", "1.5M"]);
        assert_eq!(tick_labels(&[0.0, 1e9, 2e9, 3e9], 1e9, false), ["0", "1G", "2G", "3G"]);
        assert_eq!(tick_labels(&[2e12, 4e12], 2e12, false), ["2T", "4T"]);
        assert_eq!(tick_labels(&[0.0, 2e18], 2e18, false), ["0", "2.0e18"]);
        assert_eq!(tick_labels(&[9000.0, 9500.0], 500.0, false), ["9000", "9500"]);
        assert_eq!(tick_labels(&[0.0, 0.00004], 0.00002, false), ["0", "0.00004"]);
    }

    #[test]
    fn drops_non_finite_points_and_counts_the_rest() {
        let chart = Chart {
            id: "t".into(),
            title: "<t>".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 1.0), (f64::NAN, 2.0), (2.0, 3.0)])],
            ..Default::default()
        };
        let svg = chart.render();
        assert_eq!(chart.point_count(), 2);
        assert!(svg.contains(r#"data-points="2""#));
        assert!(svg.contains(r#"data-n="2""#));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(svg.contains("&lt;t&gt;") && !svg.contains("<t>"));
    }

    #[test]
    fn empty_chart_says_so() {
        let chart = Chart { id: "e".into(), title: "E".into(), ..Default::default() };
        let html = chart.render();
        assert!(html.contains(r#"data-points="0""#) && html.contains("No data"));
    }

    /// Each mark's ring and label boxes, read back from the SVG's own
    /// coordinates: (ring, label, if drawn).
    fn mark_boxes(svg: &str) -> Vec<(Rect, Option<Rect>)> {
        let attr = |tag: &str, k: &str| -> f64 {
            tag.split(&format!(" {k}=\"")).nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
        };
        svg.split(r#"<g class="mark "#)
            .skip(1)
            .map(|g| {
                let g = g.split("</g>").next().unwrap();
                let circle = g.split("<circle").nth(1).unwrap();
                let ring = Rect::ring(attr(circle, "cx"), attr(circle, "cy"));
                let label = g.split("<text").nth(1).map(|text| {
                    let label = text.split('>').nth(1).unwrap().split('<').next().unwrap();
                    // Every label's text starts at its box's left.
                    let (left, base) = (attr(text, "x"), attr(text, "y"));
                    let width = LABEL_CHAR_PX * label.chars().count() as f64;
                    Rect { left, right: left + width, top: base - LABEL_ASCENT, bottom: base + LABEL_DESCENT }
                });
                (ring, label)
            })
            .collect()
    }

    /// No label covers a ring, and no two labels cross; every label drawn.
    fn assert_labels_clear(svg: &str) {
        let boxes = mark_boxes(svg);
        assert!(boxes.len() >= 2 && boxes.iter().all(|b| b.1.is_some()), "{svg}");
        assert_drawn_labels_clear(&boxes);
    }

    fn assert_drawn_labels_clear(boxes: &[(Rect, Option<Rect>)]) {
        for (i, (_, label)) in boxes.iter().enumerate() {
            let Some(label) = label else { continue };
            for (j, (ring, other)) in boxes.iter().enumerate() {
                assert!(!label.crosses(ring), "label {i} {label:?} covers ring {j} {ring:?}");
                assert!(i == j || other.is_none_or(|o| !label.crosses(&o)), "labels {i} and {j} cross");
            }
        }
    }

    /// A plan's crowded frontier: thirty marks along a short stretch. No
    /// drawn label crosses another or covers a ring; those with no room
    /// are left off (their rings keep them as tooltips); the recommended
    /// mark's is drawn whatever the crowd, on top.
    #[test]
    fn a_crowded_chart_leaves_off_the_labels_it_has_no_room_for() {
        let mut marks: Vec<Mark> = (0..30)
            .map(|i| mark(40.0 + i as f64, 50.0 + (i % 3) as f64, "h200 tp1x1 fp8 mbt8192 pd3:1xTP4", "mark-sat"))
            .collect();
        marks.push(mark(55.0, 51.0, "best: h100 tp1x1 pp2 fp8 mbt8192 pd2:1xTP2", "mark-rec"));
        let chart = Chart {
            id: "crowd".into(),
            title: "Crowd".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 0.0), (100.0, 100.0)])],
            marks,
            ..Default::default()
        };
        let svg = chart.render();
        let boxes = mark_boxes(&svg);
        assert_eq!(boxes.len(), 31);
        let drawn = boxes.iter().filter(|b| b.1.is_some()).count();
        assert!(drawn > 1 && drawn < 31, "{drawn} labels drawn");
        assert_drawn_labels_clear(&boxes);
        assert_eq!(svg.matches("<title>").count(), 31);
        // The recommended mark is drawn last, with its label.
        let last = svg.rsplit(r#"<g class="mark "#).next().unwrap();
        assert!(last.starts_with("mark-rec") && last.contains("<text"), "{last}");
    }

    /// A frontier's rings spread along a curve, more than their long names
    /// have room for (a plan with `--pd auto`): each name stays within a
    /// line of its ring, or the ring takes its number there; every drawn
    /// label is inside the plot, and none crosses another or a ring (names
    /// had been put four lines off, over other curves, and some rings left
    /// with nothing near).
    #[test]
    fn crowded_rings_keep_their_labels_near_or_take_their_numbers() {
        let mut marks: Vec<Mark> = (0..16)
            .map(|i| {
                let x = 10.0 + 5.0 * i as f64;
                let mut m = mark(x, 100.0 - x, &format!("h200 tp{i}x1 fp8 mbt8192 pd3:1xTP4"), "mark-sat");
                m.key = Some((i + 1).to_string());
                m
            })
            .collect();
        marks.push(mark(40.0, 60.0, "best: h100 tp1x1 pp2 fp8 mbt8192 pd2:1xTP2", "mark-rec"));
        let chart = Chart {
            id: "keys".into(),
            title: "Keys".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 100.0), (100.0, 0.0)])],
            marks,
            ..Default::default()
        };
        let svg = chart.render();
        let boxes = mark_boxes(&svg);
        assert_eq!(boxes.len(), 17);
        assert_drawn_labels_clear(&boxes);
        let texts: Vec<&str> = svg
            .split(r#"<g class="mark "#)
            .skip(1)
            .map(|g| g.split("<text").nth(1).map_or("", |t| t.split('>').nth(1).unwrap().split('<').next().unwrap()))
            .collect();
        let keyed = texts.iter().filter(|t| t.parse::<usize>().is_ok()).count();
        assert!(keyed > 0 && keyed < 16, "{keyed} keys: {texts:?}");
        // What a page's table is told are the rings drawn with their keys.
        let told: Vec<bool> = chart.marks.iter().zip(&texts).map(|(m, t)| m.key.as_deref() == Some(*t)).collect();
        assert_eq!(chart.keyed_marks(), told, "{texts:?}");
        for (i, (ring, label)) in boxes.iter().enumerate() {
            let label = label.unwrap_or_else(|| panic!("ring {i} has neither its name nor its number: {texts:?}"));
            let (cx, cy) = ((ring.left + ring.right) / 2.0, (ring.top + ring.bottom) / 2.0);
            let dx = (cx.clamp(label.left, label.right) - cx).abs();
            let dy = (cy.clamp(label.top, label.bottom) - cy).abs();
            if texts[i].parse::<usize>().is_ok() || !texts[i].starts_with("best") {
                assert!(
                    dx <= MARK_R + LABEL_GAP && dy <= 2.0 * LINE_PX + MARK_R,
                    "label {i} {label:?} far from {ring:?}"
                );
            }
            assert!(label.left >= LEFT && label.right <= W - RIGHT && label.top >= TOP - 2.0, "label {i} {label:?}");
        }
    }

    /// A plan's dense frontier, rendered as its page draws it (and as the
    /// measured frontier of `sweep --serve-grid` is): forty configurations
    /// whose frontier points lie a fraction of a token apart, with long ids.
    /// No two label boxes cross (by the estimated text box) and no label
    /// covers a ring; the best configuration's label is drawn; the page is
    /// the same each time it is rendered.
    #[test]
    fn a_dense_frontier_page_draws_no_label_over_another() {
        use goodput_core::doc::config::Extra;
        use goodput_core::doc::frontier::{
            analyze_frontier, FrontierConfig, FrontierPoint, FrontierResult, FrontierSource,
        };
        use goodput_core::doc::sweep::Load;
        let point = |users: u64, per_user: f64, per_gpu: f64| FrontierPoint {
            load: Load::Concurrency(users),
            output_tokens_per_s: per_gpu,
            output_tokens_per_s_per_gpu: per_gpu,
            tokens_per_s_per_user: Some(per_user),
            ttft_ms: Some(100.0),
            tpot_ms: Some(1000.0 / per_user),
            goodput_tokens_per_s: Some(per_gpu),
            meets_slo: Some(true),
            usd_per_million_output_tokens: Some(1000.0 / per_gpu),
            joules_per_output_token: None,
            output_tokens_per_s_per_mw: None,
            completed: 10,
            failed: 0,
            steady: None,
            client_stalled: None,
            spec_decode: None,
            extra: Extra::new(),
        };
        for source in [FrontierSource::Predicted, FrontierSource::Measured] {
            let configs = (0..40u32)
                .map(|i| {
                    let f = f64::from(i);
                    let mut c = FrontierConfig::new(
                        format!("h200 tp{}x{} pp2 fp8 mbt8192 pd3:1xTP4 seqs{}", 1 + i % 8, 1 + i / 8, 64 + i),
                        Default::default(),
                        Some("H200".into()),
                        8,
                        Some(3.2),
                    );
                    c.points =
                        vec![point(64, 40.0 + f * 0.4, 900.0 - f * 3.0), point(8, 90.0 + f * 0.1, 200.0 - f * 0.5)];
                    c
                })
                .collect();
            let mut doc = FrontierResult {
                model: "m".into(),
                configs,
                ..FrontierResult::new(
                    goodput_core::doc::result::Tool { name: "goodput".into(), version: "0".into(), commit: None },
                    source,
                    0.9,
                    50.0,
                )
            };
            analyze_frontier(&mut doc);
            assert!(doc.frontier.len() >= 40, "{:?}", doc.frontier);
            let page = crate::export::html::frontier_page(&doc).unwrap();
            assert_eq!(page, crate::export::html::frontier_page(&doc).unwrap(), "not deterministic");
            // Each chart on its own (priced, a second one per dollar).
            let figures: Vec<&str> = page.split("<figure").skip(1).collect();
            assert_eq!(figures.len(), if doc.frontier_per_usd.is_empty() { 1 } else { 2 });
            for svg in figures {
                let boxes = mark_boxes(svg);
                assert!(boxes.len() >= 30, "{} marks", boxes.len());
                let drawn = boxes.iter().filter(|b| b.1.is_some()).count();
                // The best's label and another at least (the best's
                // configuration has no second ring of its own name).
                assert!(drawn >= 2, "{drawn} labels drawn");
                assert_drawn_labels_clear(&boxes);
                if doc.best.is_some() {
                    let last = svg.rsplit(r#"<g class="mark "#).next().unwrap();
                    assert!(last.starts_with("mark-rec") && last.contains("<text"), "{last}");
                }
            }
            // The table tags a row `ring N` where, and only where, the
            // chart shows the number N by a ring (it had tagged every ringed
            // row, where the chart showed their names).
            let figure = page.split("<figure").nth(1).unwrap().split("</figure>").next().unwrap();
            let mut shown: Vec<String> = figure
                .split(r#"<g class="mark "#)
                .skip(1)
                .filter_map(|g| g.split("</g>").next().unwrap().split("<text").nth(1))
                .map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap().to_string())
                .filter(|t| t.parse::<usize>().is_ok())
                .collect();
            let table = page.split("<h2>The frontier</h2>").nth(1).unwrap().split("</table>").next().unwrap();
            let mut tagged: Vec<String> = table
                .split(r#"<span class="tag">ring "#)
                .skip(1)
                .map(|t| t.split('<').next().unwrap().to_string())
                .collect();
            shown.sort();
            tagged.sort();
            // (This chart leaves labels off rather than key them: none is
            // tagged, where every ringed row had been.)
            assert_eq!(shown, tagged);
        }
    }

    fn mark(x: f64, y: f64, label: &str, class: &'static str) -> Mark {
        Mark { x, y, label: label.into(), class, key: None, missed: false, unsteady: false, color: None }
    }

    /// Two marks whose labels would fall on one line (the second a little
    /// left of and below the first, as a sweep's recommended point often is
    /// beside its saturation) each get a place of their own.
    #[test]
    fn mark_labels_near_each_other_take_separate_places() {
        let chart = Chart {
            id: "m".into(),
            title: "M".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 0.0), (100.0, 100.0)])],
            marks: vec![
                mark(40.0, 50.0, "saturation: concurrency 88", "mark-sat"),
                mark(38.0, 45.0, "recommended: concurrency 64", "mark-rec"),
            ],
            ..Default::default()
        };
        assert_labels_clear(&chart.render());
    }

    /// The sweep of issue 36: the saturation's label, written rightwards
    /// from its point, ran over the recommended point's ring a little to
    /// the right of it and a little higher.
    #[test]
    fn a_mark_label_does_not_cover_the_ring_beside_it() {
        let chart = Chart {
            id: "sat".into(),
            title: "Throughput vs TTFT".into(),
            series: vec![Series::new(
                "TTFT p50",
                Style::LineDots,
                0,
                vec![(120.0, 23.7), (4891.9, 34.0), (6298.1, 37.8), (8352.7, 55.2), (8884.8, 648.9)],
            )],
            marks: vec![
                mark(6298.1, 37.8, "saturation: 50.659 req/s", "mark-sat"),
                mark(8352.7, 55.2, "recommended: 65.575 req/s", "mark-rec"),
            ],
            ..Default::default()
        };
        assert_labels_clear(&chart.render());
    }

    /// The numbers an attribute `k` takes in `svg`, in order.
    fn attrs(svg: &str, k: &str) -> Vec<f64> {
        svg.split(&format!(" {k}=\"")).skip(1).map(|v| v.split('"').next().unwrap().parse().unwrap()).collect()
    }

    /// A series of zeros (a run whose every TTFT read 0) is drawn on an axis
    /// from zero up, on both axes, never from -1.
    #[test]
    fn an_all_zero_series_gets_no_negative_axis() {
        let chart = Chart {
            id: "z".into(),
            title: "Z".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 0.0), (0.0, 0.0)])],
            ..Default::default()
        };
        let svg = chart.render();
        let ticks: Vec<&str> = svg
            .split(r#"class="yt""#)
            .chain(svg.split(r#"class="xt""#))
            .skip(1)
            .map(|t| t.split(['>', '<']).nth(1).unwrap())
            .collect();
        assert!(ticks.iter().all(|t| !t.starts_with('-')), "{ticks:?}");
        assert_eq!(chart.layout().unwrap().frame.y0, 0.0);
        assert_eq!(chart.layout().unwrap().frame.x0, 0.0);
    }

    /// An x axis of long labels keeps them apart and inside the canvas: the
    /// last one, at the plot's right edge, ends at the canvas's edge at most.
    #[test]
    fn x_tick_labels_stay_apart_and_inside_the_canvas() {
        for hi in [0.00028, 1094.7, 2.5e9, 61.0] {
            let chart = Chart {
                id: "x".into(),
                title: "X".into(),
                series: vec![Series::new("s", Style::Line, 0, vec![(0.0, 1.0), (hi, 2.0)])],
                ..Default::default()
            };
            let svg = chart.render();
            let labels: Vec<(&str, &str)> = svg
                .split(r#"<text class="xt""#)
                .skip(1)
                .map(|t| (t.split('>').next().unwrap(), t.split(['>', '<']).nth(1).unwrap()))
                .collect();
            assert!(labels.len() >= 2, "{hi}: {labels:?}");
            let widest = labels.iter().map(|l| tick_text_px(l.1)).fold(0.0, f64::max);
            let xs: Vec<f64> = labels.iter().map(|l| attrs(l.0, "x")[0]).collect();
            for w in xs.windows(2) {
                assert!(w[1] - w[0] >= 1.6 * widest - 1e-9, "{hi}: {labels:?}");
            }
            for ((tag, text), x) in labels.iter().zip(&xs) {
                let right = if tag.contains(r#"text-anchor="end""#) { *x } else { x + tick_text_px(text) / 2.0 };
                assert!(right <= W, "{hi}: {text} ends at {right}");
            }
            assert!(labels.iter().all(|l| !l.1.contains("000k")), "{labels:?}");
        }
    }

    /// Twelve runs (and more, up to [`STYLES`]) are drawn each in a style of
    /// its own, and a legend's swatch is drawn as its series is: dashed too.
    #[test]
    fn many_series_each_look_different_and_so_do_their_swatches() {
        let classes: Vec<String> = (0..STYLES).map(|i| style_classes(i, false)).collect();
        let distinct: HashSet<&String> = classes.iter().collect();
        assert_eq!(distinct.len(), STYLES, "{classes:?}");
        assert_ne!(style_classes(0, false), style_classes(6, false), "run 7 does not look like the baseline");
        assert_eq!(style_classes(Series::INK, true), "c6 dashed");
        let mut dashed = Series::new("predicted", Style::Line, Series::INK, vec![(0.0, 0.0), (1.0, 1.0)]);
        dashed.dashed = true;
        let solid = Series::new("measured", Style::Line, Series::INK, vec![(0.0, 1.0), (1.0, 2.0)]);
        let chart = Chart { id: "d".into(), title: "D".into(), series: vec![dashed, solid], ..Default::default() };
        let svg = chart.render();
        let legend = svg.split(r#"<div class="legend">"#).nth(1).unwrap();
        assert!(legend.contains(r#"<polyline class="line c6 dashed" points="1,4 23,4"/></svg>predicted"#), "{legend}");
        assert!(legend.contains(r#"<polyline class="line c6" points="1,4 23,4"/></svg>measured"#), "{legend}");
    }

    /// A time series of 20,000 buckets (a record's end read as years on) is
    /// drawn as at most a bar, and a line's at most four points, per pixel
    /// column; the counts the page checks agree with what is drawn.
    #[test]
    fn long_series_are_drawn_at_the_charts_width() {
        let n = 20_000;
        let bars: Vec<(f64, f64)> = (0..n).map(|i| (i as f64 * 150_000.0, (i % 7) as f64)).collect();
        let line: Vec<(f64, f64)> = steps(&bars, 150_000.0);
        let chart = Chart {
            id: "t".into(),
            title: "T".into(),
            series: vec![
                Series::new("bars", Style::Bars { width: 150_000.0 }, 0, bars),
                Series::new("line", Style::Line, 2, line),
                Series::new("dots", Style::Dots, 1, (0..n).map(|i| (i as f64 * 150_000.0, 0.0)).collect()),
            ],
            ..Default::default()
        };
        let svg = chart.render();
        let columns = (W - LEFT - RIGHT) as usize;
        let drawn_bars = svg.matches(r#"<rect class="bar"#).count();
        assert!(drawn_bars > columns / 2 && drawn_bars <= columns, "{drawn_bars} bars");
        let points = svg.split(r#"<polyline class="line c2" points=""#).nth(1).unwrap().split('"').next().unwrap();
        let vertices = points.split(' ').count();
        assert!(vertices <= 4 * columns, "{vertices} vertices");
        let dots = svg.matches(r#"<circle class="pt"#).count();
        assert!(dots <= columns + 1, "{dots} dots");
        assert_eq!(chart.point_count(), drawn_bars + vertices + dots);
        assert!(svg.contains(&format!(r#"data-points="{}""#, chart.point_count())));
        // Merged bars keep the level: their mean, 3 tokens/s here.
        assert!(svg.len() < 200_000, "{} bytes", svg.len());
        assert!(svg.contains("Drawn at the chart"));
        // A short series is drawn as it is, with no such note.
        let short = Chart {
            id: "s".into(),
            title: "S".into(),
            series: vec![Series::new("bars", Style::Bars { width: 1.0 }, 0, vec![(0.0, 1.0), (1.0, 2.0)])],
            ..Default::default()
        };
        let svg = short.render();
        assert_eq!(svg.matches(r#"<rect class="bar"#).count(), 2);
        assert!(!svg.contains("Drawn at the chart"));
    }

    /// A plan's frontier: a configuration's curve runs through its mark,
    /// a second configuration's mark lies a little above. Each label sits
    /// by its own ring (within a few lines), off the curves where a place
    /// free of them is near; a label not beside its ring is joined to it by
    /// a leader line from the ring's edge.
    #[test]
    fn mark_labels_stay_by_their_marks_off_the_lines_with_leaders_when_moved() {
        let curve = |dy: f64| (0..12).map(|i| (10.0 * i as f64, 100.0 - 7.0 * i as f64 + dy)).collect::<Vec<_>>();
        let chart = Chart {
            id: "f".into(),
            title: "F".into(),
            series: vec![
                Series::new("a", Style::LineDots, 0, curve(0.0)),
                Series::new("b", Style::LineDots, 1, curve(6.0)),
            ],
            marks: vec![
                mark(50.0, 65.0, "h100 tp1x1 fp8", "mark-sat"),
                mark(50.0, 71.0, "a100 tp2x1 bf16", "mark-sat"),
                mark(60.0, 58.0, "best: h100 tp1x2 fp8", "mark-rec"),
            ],
            ..Default::default()
        };
        let svg = chart.render();
        assert_labels_clear(&svg);
        let layout = chart.layout().unwrap();
        let (lines, _) = obstacles(&layout.frame, &layout.series);
        for (g, (ring, label)) in svg.split(r#"<g class="mark "#).skip(1).zip(mark_boxes(&svg)) {
            let label = label.unwrap();
            let (cx, cy) = ((ring.left + ring.right) / 2.0, (ring.top + ring.bottom) / 2.0);
            // Near its own ring: within the lines a label may move.
            let gap_y = (label.top - cy).max(cy - label.bottom).max(0.0);
            let gap_x = (label.left - cx).max(cx - label.right).max(0.0);
            assert!(gap_y <= LINE_PX * LABEL_LINES as f64 + MARK_R + 4.0 && gap_x <= LABEL_GAP, "{g}");
            // Off the curves: this chart has room.
            assert!(!lines.iter().any(|&(a, b)| label.crosses_segment(a, b)), "a label over a line: {g}");
            let beside = label.crosses(&ring.grown(LEADER_AFTER));
            let leader = g.split("</g>").next().unwrap().contains(r#"<line class="leader""#);
            assert_eq!(leader, !beside, "{g}");
            if leader {
                let tag = g.split(r#"<line class="leader""#).nth(1).unwrap();
                let (x1, y1) = (attrs(tag, "x1")[0], attrs(tag, "y1")[0]);
                assert!(((x1 - cx).hypot(y1 - cy) - (MARK_R + 1.5)).abs() < 0.05, "{tag}");
            }
        }
    }

    #[test]
    fn a_segment_crosses_a_box_only_where_it_passes_through() {
        let r = Rect { left: 0.0, right: 10.0, top: 0.0, bottom: 10.0 };
        assert!(r.crosses_segment((-5.0, 5.0), (15.0, 5.0)));
        assert!(r.crosses_segment((5.0, 5.0), (6.0, 6.0)));
        assert!(r.crosses_segment((-5.0, -5.0), (15.0, 15.0)));
        assert!(!r.crosses_segment((-5.0, 12.0), (15.0, 12.0)));
        assert!(!r.crosses_segment((11.0, -5.0), (11.0, 15.0)));
        assert!(!r.crosses_segment((-10.0, 5.0), (5.0, 20.0)));
    }

    #[test]
    fn steps_hold_each_value() {
        assert_eq!(steps(&[(0.0, 1.0), (1.0, 2.0)], 1.0), vec![(0.0, 1.0), (1.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
    }
}
