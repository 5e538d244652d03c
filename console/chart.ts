/// <reference lib="dom" />
// The energy chart (uPlot): daily kWh with gaps as gaps and zeros as zeros, void and provisional
// days marked apart, the summer baseline and the target thresholds as lines. Numbers become floats
// only to be drawn; the legend shows each day's decimal string as the service sent it.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { DailyRow, MetricDay } from "./api.ts";
import { t } from "./i18n.ts";
import { html } from "./ui.ts";

const toNumber = (value: string | null | undefined) => (value == null ? null : Number(value));

export const COLORS = {
  energy: "#1f6feb",
  void: "#c62828",
  provisional: "#ef6c00",
  eba: "#2e7d32",
  tes: "#6a1b9a",
  tes180: "#8e24aa",
  tes210: "#ad1457",
  tev: "#5d4037",
};

export const EnergyChart = (props: {
  days: ReadonlyArray<DailyRow>;
  metrics: ReadonlyArray<MetricDay> | null;
}) => {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const byDate = new Map((props.metrics ?? []).map((m) => [m.business_date, m]));
    const days = props.days;
    const text: Array<Array<string | null>> = [];
    const column = (pick: (d: DailyRow, m: MetricDay | undefined) => string | null) => {
      const strings = days.map((d) => pick(d, byDate.get(d.business_date)));
      text.push(strings);
      return strings.map(toNumber);
    };
    const xs = days.map((d) => Date.parse(`${d.business_date}T00:00:00Z`) / 1000);
    const series = [
      column((d) => d.energy_kwh),
      column((d) => (d.status === "VOID" ? "0" : null)),
      column((d, m) => (m?.provisional === 1 ? d.energy_kwh : null)),
      column((_, m) => m?.eba_kwh ?? null),
      column((_, m) => m?.tes_threshold_kwh ?? null),
      column((_, m) => m?.tes_180_threshold_kwh ?? null),
      column((_, m) => m?.tes_210_threshold_kwh ?? null),
      column((_, m) => m?.tev_threshold_kwh ?? null),
    ];
    // The legend's value of a day: the service's string (a void day says so).
    const exact = (index: number) => (_u: uPlot, _v: number | null, _s: number, i: number | null) =>
      i === null
        ? ""
        : index === 1
        ? (text[1][i] === null ? "" : t("legendVoid"))
        : text[index][i] ?? t("none");
    const line = (index: number, label: string, stroke: string, dash?: number[]) => ({
      label,
      stroke,
      width: 1.5,
      dash,
      spanGaps: false,
      points: { show: false },
      value: exact(index),
    });
    const marks = (index: number, label: string, color: string, fill: string, size: number) => ({
      label,
      stroke: color,
      fill,
      width: 0,
      paths: () => null,
      points: { show: true, size, stroke: color, fill, width: 2 },
      value: exact(index),
    });
    const options: uPlot.Options = {
      width: Math.max(280, element.clientWidth),
      height: element.clientWidth < 500 ? 240 : 320,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "UTC"),
      scales: { x: { time: true } },
      axes: [{}, { label: "kWh", size: 60 }],
      cursor: { points: { size: 6 } },
      series: [
        { value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) },
        {
          ...line(0, t("kwh"), COLORS.energy),
          points: { show: true, size: 4, fill: COLORS.energy },
        },
        marks(1, t("legendVoid"), COLORS.void, COLORS.void, 9),
        marks(2, t("legendProvisional"), COLORS.provisional, "#ffffff", 10),
        line(3, "EBA", COLORS.eba, [6, 4]),
        line(4, t("tes"), COLORS.tes, [2, 3]),
        line(5, t("tes180"), COLORS.tes180, [8, 3]),
        line(6, t("tes210"), COLORS.tes210, [4, 4]),
        line(7, `${t("tev")} × r`, COLORS.tev, [1, 4]),
      ],
    };
    const plot = new uPlot(options, [xs, ...series] as uPlot.AlignedData, element);
    const observer = new ResizeObserver(() =>
      plot.setSize({
        width: Math.max(280, element.clientWidth),
        height: element.clientWidth < 500 ? 240 : 320,
      })
    );
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
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
          <li><span class="swatch dashed" data-color="tes"></span>${t("legendTes")}</li>
          <li><span class="swatch dashed" data-color="tes180"></span>${t("legendTes180")}</li>
          <li><span class="swatch dashed" data-color="tes210"></span>${t("legendTes210")}</li>
          <li><span class="swatch dashed" data-color="tev"></span>${t("legendTev")}</li>
        </ul>
      </figcaption>
    </figure>
  `;
};
