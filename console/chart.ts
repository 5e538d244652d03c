/// <reference lib="dom" />
// The store's charts (uPlot). Consumption: daily kWh with gaps as gaps and zeros as zeros, void and
// provisional days marked apart, the EBA baseline and the TEV threshold (both limits on the
// consumption itself). Savings: EBA − actual per day or summed, with the TES targets on the same
// axis (a TES is a savings target, rules.md §6). Both shade the store's stages: savings count only
// in TRIAL and OPERATING (rules.md §3). Numbers become floats only to be drawn; the legend shows each
// day's decimal string as the service sent it, or as the exact difference of two of them.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { DailyRow, MetricDay } from "./api.ts";
import { formatTick, tickDate } from "./format.ts";
import { language, t } from "./i18n.ts";
import { html } from "./ui.ts";

const toNumber = (value: string | null | undefined) => (value == null ? null : Number(value));

export const COLORS = {
  energy: "#1f6feb",
  void: "#c62828",
  provisional: "#ef6c00",
  eba: "#2e7d32",
  savings: "#00695c",
  tes: "#6a1b9a",
  tes180: "#8e24aa",
  tes210: "#ad1457",
  tev: "#5d4037",
};

// The fills of the stage bands: where savings count, and the other stages.
const STAGE_FILL = { counts: "rgba(46, 125, 50, 0.10)", other: "rgba(87, 96, 106, 0.10)" };

export const savingsCount = (stage: string | null) => stage === "TRIAL" || stage === "OPERATING";

const DAY_SECONDS = 86_400;
const secondsOf = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000;

// --- Exact decimals: the service's strings as whole ten-thousandths (BigInt), no float.

const units = (s: string) => {
  const negative = s.startsWith("-");
  const [whole, fraction = ""] = (negative ? s.slice(1) : s).split(".");
  const n = BigInt(whole + fraction.slice(0, 4).padEnd(4, "0"));
  return negative ? -n : n;
};

const decimalOf = (n: bigint) => {
  const digits = (n < 0n ? -n : n).toString().padStart(5, "0");
  return `${n < 0n ? "-" : ""}${digits.slice(0, -4)}.${digits.slice(-4)}`;
};

// --- Stage bands: runs of days in one stage, shaded behind the series.

interface Band {
  readonly stage: string;
  readonly from: number;
  readonly to: number;
}

export const stageBands = (days: ReadonlyArray<MetricDay>): Array<Band> => {
  const bands: Array<Band> = [];
  for (const d of days) {
    if (d.stage === null) continue;
    const at = secondsOf(d.business_date);
    const last = bands.at(-1);
    if (last !== undefined && last.stage === d.stage && last.to === at - DAY_SECONDS) {
      bands[bands.length - 1] = { ...last, to: at };
    } else bands.push({ stage: d.stage, from: at, to: at });
  }
  return bands;
};

// Each band spans its days from half a day before the first to half a day after the last.
const shadeStages = (bands: ReadonlyArray<Band>) => (u: uPlot) => {
  const { ctx, bbox } = u;
  ctx.save();
  for (const band of bands) {
    const left = u.valToPos(band.from - DAY_SECONDS / 2, "x", true);
    const right = u.valToPos(band.to + DAY_SECONDS / 2, "x", true);
    const x0 = Math.max(left, bbox.left);
    const x1 = Math.min(right, bbox.left + bbox.width);
    if (x1 <= x0) continue;
    ctx.fillStyle = savingsCount(band.stage) ? STAGE_FILL.counts : STAGE_FILL.other;
    ctx.fillRect(x0, bbox.top, x1 - x0, bbox.height);
  }
  ctx.restore();
};

// A thin line at 0 kWh: savings below it are days that used more than the baseline.
const zeroLine = (u: uPlot) => {
  const y = u.valToPos(0, "y", true);
  const { ctx, bbox } = u;
  if (y < bbox.top || y > bbox.top + bbox.height) return;
  ctx.save();
  ctx.strokeStyle = "#57606a";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(bbox.left, y);
  ctx.lineTo(bbox.left + bbox.width, y);
  ctx.stroke();
  ctx.restore();
};

// --- One uPlot chart of string columns, sized to its box and redrawn on resize.

interface Column {
  readonly values: ReadonlyArray<string | null>;
  readonly series: uPlot.Series;
}

const sizeOf = (element: HTMLElement) => ({
  width: Math.max(280, element.clientWidth),
  height: element.clientWidth < 500 ? 240 : 320,
});

const useChart = (
  box: { readonly current: HTMLDivElement | null },
  make: () => {
    xs: ReadonlyArray<number>;
    columns: ReadonlyArray<Column>;
    hooks?: uPlot.Hooks.Arrays;
  },
  deps: unknown[],
) =>
  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const { xs, columns, hooks } = make();
    const options: uPlot.Options = {
      ...sizeOf(element),
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "UTC"),
      scales: { x: { time: true } },
      // Ticks in the page's language (uPlot's own are English dates and the browser's numbers):
      // month ticks fall on the first of a month, day ticks on any day.
      // A month's label in Chinese (2026年11月) is about 70 px wide: ticks at least 90 px apart.
      // The right padding keeps the last label whole.
      padding: [null, 28, null, null],
      axes: [
        {
          space: 90,
          values: (_u, splits) => {
            const months = splits.every((s) => new Date(s * 1000).getUTCDate() === 1);
            return splits.map((s) => tickDate(s, months && splits.length > 1, language()));
          },
        },
        {
          label: t("kwh"),
          size: 60,
          values: (_u, splits) => splits.map((v) => formatTick(v, language())),
        },
      ],
      cursor: { points: { size: 6 } },
      hooks,
      series: [
        {
          label: t("date"),
          value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)),
        },
        ...columns.map((c) => c.series),
      ],
    };
    const data = [xs, ...columns.map((c) => c.values.map(toNumber))] as uPlot.AlignedData;
    const plot = new uPlot(options, data, element);
    const observer = new ResizeObserver(() => plot.setSize(sizeOf(element)));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, deps);

// The legend's value of a day: the column's string, or a dash.
const exact = (values: ReadonlyArray<string | null>, shown = (s: string) => s) =>
(
  _u: uPlot,
  _v: number | null,
  _s: number,
  i: number | null,
) => (i === null ? "" : values[i] === null ? t("none") : shown(values[i]!));

const line = (
  values: ReadonlyArray<string | null>,
  label: string,
  stroke: string,
  dash?: number[],
): Column => ({
  values,
  series: {
    label,
    stroke,
    width: 1.5,
    dash,
    spanGaps: false,
    points: { show: false },
    value: exact(values),
  },
});

const marks = (
  values: ReadonlyArray<string | null>,
  label: string,
  color: string,
  fill: string,
  size: number,
  shown?: (s: string) => string,
): Column => ({
  values,
  series: {
    label,
    stroke: color,
    fill,
    width: 0,
    paths: () => null,
    points: { show: true, size, stroke: color, fill, width: 2 },
    value: exact(values, shown),
  },
});

// A line that also marks each day (a lone day between gaps stays visible).
const withPoints = (column: Column, fill: string): Column => ({
  ...column,
  series: { ...column.series, points: { show: true, size: 4, fill } },
});

const StageLegend = () =>
  html`
    <li><span class="swatch band" data-color="stage-counts"></span>${t("legendStageCounts")}</li>
    <li><span class="swatch band" data-color="stage-other"></span>${t("legendStageOther")}</li>
  `;

export const EnergyChart = (props: {
  days: ReadonlyArray<DailyRow>;
  metrics: ReadonlyArray<MetricDay> | null;
}) => {
  const box = useRef<HTMLDivElement>(null);
  useChart(box, () => {
    const byDate = new Map((props.metrics ?? []).map((m) => [m.business_date, m]));
    const days = props.days;
    const pick = (f: (d: DailyRow, m: MetricDay | undefined) => string | null) =>
      days.map((d) => f(d, byDate.get(d.business_date)));
    return {
      xs: days.map((d) => secondsOf(d.business_date)),
      hooks: { drawClear: [shadeStages(stageBands(props.metrics ?? []))] },
      columns: [
        withPoints(line(pick((d) => d.energy_kwh), t("kwh"), COLORS.energy), COLORS.energy),
        marks(
          pick((d) => (d.status === "VOID" ? "0" : null)),
          t("legendVoid"),
          COLORS.void,
          COLORS.void,
          9,
          () => t("legendVoid"),
        ),
        marks(
          pick((d, m) => (m?.provisional === 1 ? d.energy_kwh : null)),
          t("legendProvisional"),
          COLORS.provisional,
          "#ffffff",
          10,
        ),
        line(pick((_, m) => m?.eba_kwh ?? null), "EBA", COLORS.eba, [6, 4]),
        line(pick((_, m) => m?.tev_threshold_kwh ?? null), `${t("tev")} × r`, COLORS.tev, [1, 4]),
      ],
    };
  }, [props.days, props.metrics]);
  return html`
    <figure class="chart-figure">
      <div ref=${box} class="chart" role="img" aria-label=${t(
        "chartLabel",
      )} data-testid="chart"></div>
      <figcaption>
        <h3>${t("legendTitle")}</h3>
        <ul class="legend">
          <li><span class="swatch line" data-color="energy"></span>${t("legendEnergy")}</li>
          <li><span class="swatch dot" data-color="void"></span>${t("legendVoid")}</li>
          <li><span class="swatch ring" data-color="provisional"></span>${t(
            "legendProvisional",
          )}</li>
          <li><span class="swatch dashed" data-color="eba"></span>${t("legendEba")}</li>
          <li><span class="swatch dashed" data-color="tev"></span>${t("legendTev")}</li>
          <${StageLegend} />
        </ul>
      </figcaption>
    </figure>
  `;
};

// The savings of each day where they count (actual and EBA present, stage TRIAL or OPERATING) and
// the TES targets of those days, per day or summed from the range's first such day, as exact
// decimal strings.
export const savingsColumns = (days: ReadonlyArray<MetricDay>, cumulative: boolean) => {
  const sums = [0n, 0n, 0n, 0n];
  const columns: Array<Array<string | null>> = [[], [], [], []];
  for (const d of days) {
    const counts = d.actual_kwh !== null && d.eba_kwh !== null && savingsCount(d.stage);
    const values = [
      counts ? decimalOf(units(d.eba_kwh!) - units(d.actual_kwh!)) : null,
      counts ? d.tes_threshold_kwh : null,
      counts ? d.tes_180_threshold_kwh : null,
      counts ? d.tes_210_threshold_kwh : null,
    ];
    values.forEach((value, i) => {
      if (!cumulative || value === null) return columns[i].push(value);
      sums[i] += units(value);
      columns[i].push(decimalOf(sums[i]));
    });
  }
  return { savings: columns[0], tes: columns[1], tes180: columns[2], tes210: columns[3] };
};

export const SavingsChart = (props: { days: ReadonlyArray<MetricDay>; cumulative: boolean }) => {
  const box = useRef<HTMLDivElement>(null);
  useChart(box, () => {
    const c = savingsColumns(props.days, props.cumulative);
    return {
      xs: props.days.map((d) => secondsOf(d.business_date)),
      hooks: { drawClear: [shadeStages(stageBands(props.days))], draw: [zeroLine] },
      columns: [
        withPoints(line(c.savings, t("savingsSeries"), COLORS.savings), COLORS.savings),
        line(c.tes, t("tes"), COLORS.tes, [2, 3]),
        line(c.tes180, t("tes180"), COLORS.tes180, [8, 3]),
        line(c.tes210, t("tes210"), COLORS.tes210, [4, 4]),
      ],
    };
  }, [props.days, props.cumulative]);
  return html`
    <figure class="chart-figure">
      <div ref=${box} class="chart" role="img" aria-label=${t(
        props.cumulative ? "savingsChartCumulative" : "savingsChartDaily",
      )}
        data-testid="savings-chart"></div>
      <figcaption>
        <h3>${t("legendTitle")}</h3>
        <ul class="legend">
          <li><span class="swatch line" data-color="savings"></span>${t(
            props.cumulative ? "legendSavingsCumulative" : "legendSavings",
          )}</li>
          <li><span class="swatch dashed" data-color="tes"></span>${t("legendTes")}</li>
          <li><span class="swatch dashed" data-color="tes180"></span>${t("legendTes180")}</li>
          <li><span class="swatch dashed" data-color="tes210"></span>${t("legendTes210")}</li>
          <${StageLegend} />
        </ul>
      </figcaption>
    </figure>
  `;
};
