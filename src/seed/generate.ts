// Deterministic generator of a realistic demo snapshot (seeded PRNG, integer kWh ticks, no clock).
import { Decimal } from "decimal.js";
import { dateOfDay, dayIndex } from "../domain/range.ts";
import {
  type Snapshot,
  SNAPSHOT_FORMAT,
  type SnapshotCleanedValue,
  type SnapshotDevice,
  type SnapshotDeviceEvent,
  type SnapshotEnergy,
  type SnapshotPricedItem,
  type SnapshotStageEntry,
  type SnapshotStageSnapshot,
  type SnapshotStore,
  type SnapshotStrategy,
  type SnapshotStrategyItem,
  type SnapshotTargetCandidate,
  type SnapshotTargetPeriod,
  type SnapshotTevObservation,
} from "./snapshot.ts";

export interface GenerateOptions {
  readonly stores?: number;
  readonly seed?: number;
}

export const DEMO_START = "2025-01-01";
export const DEMO_END = "2026-11-20";
export const DEMO_OBSERVED_AT = "2026-11-20T06:30:00Z";
const SYNCED_AT = "2026-11-20T02:00:00Z";
const DEFAULT_SEED = 20261120;

type Rng = () => number;

// mulberry32: 32-bit integer steps only, so every engine produces the same sequence.
const mulberry32 = (seed: number): Rng => {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

const mix = (a: number, b: number): number => {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 1, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
};

const intIn = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
const chance = (rng: Rng, p: number) => rng() < p;
const pick = <A>(rng: Rng, items: ReadonlyArray<A>): A => items[Math.floor(rng() * items.length)];

// kWh values are integers of 0.0001 kWh ("ticks") until they are printed.
const fmt4 = (ticks: number) =>
  `${Math.floor(ticks / 10000)}.${String(ticks % 10000).padStart(4, "0")}`;
const fmt2 = (cents: number) =>
  `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
const scale = (ticks: number, permille: number) => Math.floor((ticks * permille) / 1000);

const BRANDS = [
  { id: 1, name: "茶语时光", code: "CYSG" },
  { id: 2, name: "鲜果工坊", code: "XGGF" },
  { id: 3, name: "云朵咖啡", code: "YDKF" },
  { id: 4, name: "麦香烘焙", code: "MXHB" },
  { id: 5, name: "柠檬物语", code: "NMWY" },
] as const;

const CITIES = [
  {
    name: "上海",
    code: "SH",
    districts: ["徐汇区", "静安区", "浦东新区", "闵行区"],
    roads: ["漕溪北路", "南京西路", "世纪大道", "虹井路"],
  },
  {
    name: "北京",
    code: "BJ",
    districts: ["朝阳区", "海淀区", "东城区", "丰台区"],
    roads: ["建国路", "中关村大街", "王府井大街", "丰台北路"],
  },
  {
    name: "广州",
    code: "GZ",
    districts: ["天河区", "越秀区", "海珠区", "番禺区"],
    roads: ["天河路", "北京路", "江南大道", "市桥路"],
  },
  {
    name: "深圳",
    code: "SZ",
    districts: ["南山区", "福田区", "罗湖区", "宝安区"],
    roads: ["深南大道", "福华路", "人民南路", "新安路"],
  },
  {
    name: "杭州",
    code: "HZ",
    districts: ["西湖区", "上城区", "滨江区", "余杭区"],
    roads: ["文三路", "延安路", "江南大道", "文一西路"],
  },
  {
    name: "成都",
    code: "CD",
    districts: ["锦江区", "武侯区", "高新区", "青羊区"],
    roads: ["春熙路", "科华北路", "天府大道", "人民西路"],
  },
  {
    name: "武汉",
    code: "WH",
    districts: ["江汉区", "武昌区", "洪山区"],
    roads: ["解放大道", "中南路", "珞喻路"],
  },
  {
    name: "南京",
    code: "NJ",
    districts: ["鼓楼区", "玄武区", "秦淮区", "建邺区"],
    roads: ["中山路", "珠江路", "太平南路", "江东中路"],
  },
] as const;

const LANDMARKS = [
  "万象城",
  "大悦城",
  "龙湖天街",
  "吾悦广场",
  "万达广场",
  "印象城",
  "来福士",
  "凯德广场",
  "银泰城",
  "太古里",
  "环球港",
  "世纪汇",
  "宝龙广场",
  "爱琴海",
  "星光天地",
  "合生汇",
  "正大广场",
  "中心广场",
  "火车站",
  "大学城",
];

const TAGS = ["商场店", "街边店", "旗舰店", "交通枢纽", "社区店", "写字楼店"];

// Permille of a store's summer-peak load, per month (Beijing climate of the chain's cities).
const MONTH_PROFILE = [
  430,
  380,
  340,
  400,
  580,
  820,
  1000,
  990,
  780,
  500,
  370,
  420,
];

const SPRING_FESTIVALS = ["2025-01-28", "2026-02-16"];

const PRICED_ITEMS = [
  { name: "空调节能控制器", lo: 268000, hi: 420000, qty: [2, 8] },
  { name: "智能电表", lo: 86000, hi: 120000, qty: [1, 3] },
  { name: "温湿度传感器", lo: 18000, hi: 32000, qty: [2, 6] },
  { name: "物联网网关", lo: 120000, hi: 180000, qty: [1, 1] },
  { name: "安装调试服务", lo: 150000, hi: 300000, qty: [1, 1] },
] as const;

const DEVICE_KINDS = [
  { type: "物联网网关", code: "GW", names: ["门店网关"], material: "GW-4G-01" },
  {
    type: "智能电表",
    code: "EM",
    names: ["空调总电表"],
    material: "MTR-3P-100A",
  },
  {
    type: "空调节能控制器",
    code: "AC",
    names: [
      "前厅空调控制器",
      "后厨空调控制器",
      "吧台空调控制器",
      "仓库空调控制器",
    ],
    material: "AC-CTL-2201",
  },
  {
    type: "温湿度传感器",
    code: "TH",
    names: ["前厅温湿度传感器", "后厨温湿度传感器"],
    material: "TH-S200",
  },
] as const;

const STRATEGY_NAMES = [
  "工作日营业时段",
  "周末营业时段",
  "午市高峰预冷",
  "夜间闭店节能",
  "节假日模式",
  "夏季高温模式",
];

const STAGE_REASONS: Record<string, string> = {
  BASELINE: "项目签约，进入基线期",
  INSTALLING: "设备进场安装",
  TRIAL: "安装完成，开始试运行",
  OPERATING: "试运行验收通过，正式运行",
  SUSPENDED: "门店装修，暂停节能服务",
  EXITED: "门店闭店，退出项目",
};

const PROGRESS: Record<string, string> = {
  BASELINE: "基线测量中",
  INSTALLING: "安装中",
  TRIAL: "试运行中",
  OPERATING: "运行中",
  SUSPENDED: "已暂停",
  EXITED: "已退出",
};

type Scenario = "standard" | "none" | "suspended" | "exited" | "late";

// A fixed rotation, so that any 20 consecutive stores (and the first six) show every stage story.
const SCENARIOS: ReadonlyArray<Scenario> = [
  "standard",
  "none",
  "standard",
  "late",
  "suspended",
  "standard",
  "exited",
  "standard",
  "standard",
  "late",
  "standard",
  "standard",
  "none",
  "standard",
  "standard",
  "standard",
  "standard",
  "standard",
  "standard",
  "standard",
];

interface Stage {
  readonly stage: SnapshotStageEntry["stage"];
  readonly from: number;
  readonly to: number | null;
}

const seasonalPermilleOf = (day: number): number => {
  const date = dateOfDay(day);
  const month = Number(date.slice(5, 7)) - 1;
  const dom = Number(date.slice(8, 10));
  // Linear between mid-month points: before the 15th blend with the previous month.
  const [from, to, weight] = dom >= 15
    ? [month, (month + 1) % 12, dom - 15]
    : [(month + 11) % 12, month, dom + 15];
  return MONTH_PROFILE[from] +
    Math.floor(((MONTH_PROFILE[to] - MONTH_PROFILE[from]) * weight) / 30);
};

const stageAt = (stages: ReadonlyArray<Stage>, day: number) =>
  stages.find((s) => s.from <= day && (s.to === null || day < s.to))?.stage;

const planStages = (
  rng: Rng,
  scenario: Scenario,
  open: number,
  end: number,
): Array<Stage> => {
  if (scenario === "none") return [];
  if (scenario === "late") {
    const install = dayIndex("2026-02-01") + intIn(rng, -15, 15);
    const trial = install + intIn(rng, 30, 50);
    const operate = trial + intIn(rng, 45, 70);
    return [
      { stage: "BASELINE", from: open, to: install },
      { stage: "INSTALLING", from: install, to: trial },
      { stage: "TRIAL", from: trial, to: operate < end ? operate : null },
      ...(operate < end ? [{ stage: "OPERATING" as const, from: operate, to: null }] : []),
    ];
  }
  const install = dayIndex("2025-10-01") + intIn(rng, -20, 20);
  const trial = dayIndex("2026-01-15") + intIn(rng, -12, 12);
  const operate = dayIndex("2026-04-01") + intIn(rng, -10, 10);
  const base: Array<Stage> = [
    { stage: "BASELINE", from: open, to: install },
    { stage: "INSTALLING", from: install, to: trial },
  ];
  if (scenario === "exited") {
    const exit = dayIndex("2026-03-01") + intIn(rng, 0, 120);
    const trialEnd = Math.min(exit, operate);
    return [
      ...base,
      { stage: "TRIAL", from: trial, to: trialEnd },
      ...(exit > operate ? [{ stage: "OPERATING" as const, from: operate, to: exit }] : []),
      { stage: "EXITED", from: exit, to: null },
    ];
  }
  const withTrial: Array<Stage> = [
    ...base,
    { stage: "TRIAL", from: trial, to: operate },
  ];
  if (scenario === "suspended") {
    const pause = dayIndex("2026-08-01") + intIn(rng, -20, 20);
    const resume = chance(rng, 0.5) ? pause + intIn(rng, 20, 45) : null;
    return [
      ...withTrial,
      { stage: "OPERATING", from: operate, to: pause },
      { stage: "SUSPENDED", from: pause, to: resume },
      ...(resume !== null ? [{ stage: "OPERATING" as const, from: resume, to: null }] : []),
    ];
  }
  return [...withTrial, { stage: "OPERATING", from: operate, to: null }];
};

const stageSavingPermille = (
  stage: Stage["stage"] | undefined,
  saving: number,
) => stage === "TRIAL" || stage === "OPERATING" ? saving : stage === "INSTALLING" ? 975 : 1000;

interface EnergyPlan {
  readonly energy: SnapshotEnergy;
  readonly summerTicks: number;
}

const planEnergy = (
  rng: Rng,
  store: { id: number; scopeId: number },
  open: number,
  last: number,
  stages: ReadonlyArray<Stage>,
  end: number,
  seasonalPermille: (day: number) => number,
): EnergyPlan => {
  const baseTicks = intIn(rng, 250_000, 1_400_000);
  const saving = intIn(rng, 780, 900);
  const closesForFestival = chance(rng, 0.35);
  const values: Array<number | null> = [];
  for (let day = open; day <= last; day++) {
    // Day 0 (1970-01-01) was a Thursday.
    const weekday = (day + 4) % 7;
    let ticks = scale(baseTicks, seasonalPermille(day));
    if (weekday === 0 || weekday === 6) ticks = scale(ticks, 1060);
    ticks = scale(
      ticks,
      stageSavingPermille(stageAt(stages, day), saving),
    );
    ticks = scale(ticks, 1000 + intIn(rng, -70, 70) + intIn(rng, -70, 70));
    values.push(ticks);
  }
  const length = values.length;
  const idx = (date: string) => dayIndex(date) - open;
  if (closesForFestival) {
    for (const eve of SPRING_FESTIVALS) {
      const from = idx(eve);
      const days = intIn(rng, 2, 4);
      for (let k = from; k < from + days; k++) {
        if (k >= 0 && k < length) values[k] = 0;
      }
    }
  }
  // The end date always carries a reading so that it can be the provisional day.
  const lastFree = last === end ? length - 2 : length - 1;
  for (let k = 0; k <= lastFree; k++) {
    const r = rng();
    if (r < 0.006) values[k] = null;
    else if (r < 0.009) values[k] = 0;
  }
  const gaps = chance(rng, 0.55) ? (chance(rng, 0.25) ? 2 : 1) : 0;
  for (let g = 0; g < gaps && lastFree > 20; g++) {
    const from = intIn(rng, 0, lastFree - 15);
    const days = intIn(rng, 2, 14);
    for (let k = from; k < from + days && k <= lastFree; k++) values[k] = null;
  }
  if (last === end) values[length - 1] = scale(values[length - 1] ?? 0, 550);

  const cleaned: Array<SnapshotCleanedValue> = [];
  const cleanedAt = new Set<number>();
  if (chance(rng, 0.45)) {
    const windows: Array<[number, number]> = [[
      dayIndex("2025-06-01") + intIn(rng, 0, 30),
      intIn(rng, 30, 90),
    ]];
    if (chance(rng, 0.5)) {
      windows.push([
        dayIndex("2026-05-01") + intIn(rng, 0, 60),
        intIn(rng, 20, 60),
      ]);
    }
    for (const [from, days] of windows) {
      for (let day = from; day < from + days; day++) {
        const k = day - open;
        if (k < 0 || k > lastFree || cleanedAt.has(k)) continue;
        const legacy = values[k];
        if (legacy === null) {
          if (!chance(rng, 0.6)) continue;
          const near = values[k - 1] ?? values[k + 1] ?? scale(baseTicks, 800);
          cleaned.push({
            date: dateOfDay(day),
            kwh: fmt4(near),
            quality_status: "ESTIMATED",
            quality_note: "缺测日，按相邻日用电量插补",
          });
        } else if (chance(rng, 0.8)) {
          cleaned.push({ date: dateOfDay(day), kwh: fmt4(legacy) });
        } else {
          cleaned.push({
            date: dateOfDay(day),
            kwh: fmt4(scale(legacy, intIn(rng, 850, 1150))),
            quality_status: "REVIEWED",
            quality_note: "电表读数跳变，已按分项计量修正",
          });
        }
        cleanedAt.add(k);
      }
    }
  }

  const voids: Array<number> = [];
  if (chance(rng, 0.15)) {
    const count = intIn(rng, 1, 3);
    for (let v = 0; v < count; v++) {
      let k = intIn(rng, 0, lastFree);
      if (chance(rng, 0.3)) {
        const gap = values.findIndex((x, i) => x === null && i >= k);
        if (gap >= 0) k = gap;
      }
      if (!cleanedAt.has(k) && !voids.includes(k)) voids.push(k);
    }
    voids.sort((a, b) => a - b);
  }

  const summer = values.slice(idx("2025-07-01"), idx("2025-08-01"))
    .filter((v): v is number => v !== null && v > 0);
  return {
    energy: {
      store_id: store.id,
      scope_id: store.scopeId,
      start: dateOfDay(open),
      legacy: values.map((v) => (v === null ? null : fmt4(v))),
      cleaned,
      void_days: voids.map((k) => dateOfDay(open + k)),
      provisional: last === end ? { date: dateOfDay(end), observed_at: DEMO_OBSERVED_AT } : null,
    },
    summerTicks: summer.length > 0
      ? Math.floor(summer.reduce((a, b) => a + b, 0) / summer.length)
      : scale(baseTicks, 950),
  };
};

const hoursFor = (rng: Rng) => {
  const r = rng();
  if (r < 0.6) {
    return {
      business: [{ start: "10:00", end: "22:00", next_day: false }],
      peak: [
        { start: "11:30", end: "13:30", next_day: false },
        { start: "17:30", end: "20:00", next_day: false },
      ],
    };
  }
  if (r < 0.78) {
    return {
      business: [{ start: "07:00", end: "21:30", next_day: false }],
      peak: [{ start: "07:30", end: "09:30", next_day: false }],
    };
  }
  if (r < 0.92) {
    return {
      business: [{ start: "10:00", end: "02:00", next_day: true }],
      peak: [{ start: "21:00", end: "00:30", next_day: true }],
    };
  }
  return { business: null, peak: null };
};

const isoAt = (day: number, minutes: number) =>
  `${dateOfDay(day)}T${String(Math.floor(minutes / 60)).padStart(2, "0")}:${
    String(minutes % 60).padStart(2, "0")
  }:00Z`;

// Same input, same snapshot: each store draws from its own PRNG stream, so N stores are a prefix of N+1.
export const generateSnapshot = (options: GenerateOptions = {}): Snapshot => {
  const storeCount = options.stores ?? 60;
  if (!Number.isInteger(storeCount) || storeCount < 1) {
    throw new RangeError(
      `stores must be a positive integer, got ${storeCount}`,
    );
  }
  const seed = options.seed ?? DEFAULT_SEED;
  const start = dayIndex(DEMO_START);
  const end = dayIndex(DEMO_END);
  const seasonal = Array.from(
    { length: end - start + 1 },
    (_, k) => seasonalPermilleOf(start + k),
  );
  const seasonalPermille = (day: number) => seasonal[day - start];

  const stores: Array<SnapshotStore> = [];
  const stageHistory: Array<SnapshotStageEntry> = [];
  const stageSnapshots: Array<SnapshotStageSnapshot> = [];
  const devices: Array<SnapshotDevice> = [];
  const deviceEvents: Array<SnapshotDeviceEvent> = [];
  const strategies: Array<SnapshotStrategy> = [];
  const strategyItems: Array<SnapshotStrategyItem> = [];
  const targetPeriods: Array<SnapshotTargetPeriod> = [];
  const tevObservations: Array<SnapshotTevObservation> = [];
  const candidates: Array<SnapshotTargetCandidate> = [];
  const energy: Array<SnapshotEnergy> = [];
  const namesByBrand = new Map<number, Set<string>>();

  for (let i = 0; i < storeCount; i++) {
    const rng = mulberry32(mix(seed, i));
    const id = i + 1;
    const scopeId = 10_000 + id;
    const brand = BRANDS[i % BRANDS.length];
    const city = pick(rng, CITIES);
    const districtIndex = intIn(rng, 0, city.districts.length - 1);
    const district = city.districts[districtIndex];
    const area = district.replace(/新?区$/, "");
    const landmark = pick(rng, LANDMARKS);
    const used = namesByBrand.get(brand.id) ?? new Set<string>();
    namesByBrand.set(brand.id, used);
    let name = `${city.name}${area}${landmark}店`;
    for (let n = 2; used.has(name); n++) {
      name = `${city.name}${area}${landmark}${n}店`;
    }
    used.add(name);
    const storeCode = `${brand.code}-${city.code}-${String(id).padStart(5, "0")}`;

    const scenario = SCENARIOS[i % SCENARIOS.length];
    const open = scenario === "late" ? start + intIn(rng, 30, 200) : start;
    const stages = planStages(rng, scenario, open, end);
    const exit = stages.find((s) => s.stage === "EXITED")?.from;
    const last = exit === undefined ? end : exit - 1;
    const current = stageAt(stages, end);

    const hours = hoursFor(rng);
    const isKey = chance(rng, 0.15);
    const tagCount = intIn(rng, 0, 3);
    const tags = tagCount === 0 ? null : [
      ...new Set(Array.from({ length: tagCount }, () => pick(rng, TAGS))),
    ];
    const indoor = intIn(rng, 2, 12);
    stores.push({
      id,
      brand_id: brand.id,
      store_code: storeCode,
      source_org_id: chance(rng, 0.9) ? 880_000 + id * 13 : null,
      name,
      address: chance(rng, 0.95)
        ? `${city.name}市${district}${city.roads[districtIndex]}${
          intIn(rng, 1, 1999)
        }号${landmark}${pick(rng, ["B1", "1F", "2F", "3F"])}-${intIn(rng, 1, 60)}`
        : null,
      city: city.name,
      business_hours: hours.business,
      peak_hours: hours.peak,
      business_mode: pick(rng, ["直营", "直营", "加盟", null]),
      settlement_mode: pick(rng, [
        "节能收益分享",
        "设备租赁",
        "一次性采购",
        null,
      ]),
      is_key_store: isKey,
      key_store_status: isKey ? "MARKED" : "UNCONFIRMED",
      tags,
      equipment_profile: chance(rng, 0.85)
        ? {
          ac_type: pick(rng, ["多联机", "分体空调", "风机盘管"]),
          indoor_units: indoor,
          outdoor_units: Math.max(1, Math.floor(indoor / 3)),
          rated_cooling_kw: fmt2(indoor * intIn(rng, 250, 560)),
          install_year: intIn(rng, 2015, 2023),
        }
        : null,
      profile_editable: scenario !== "exited" && chance(rng, 0.95),
      scope: {
        id: scopeId,
        kind: "AIR_CONDITIONING",
        unit: "kWh",
        timezone: "Asia/Shanghai",
      },
    });

    for (const s of stages) {
      stageHistory.push({
        store_id: id,
        stage: s.stage,
        valid_from: dateOfDay(s.from),
        valid_to: s.to === null ? null : dateOfDay(s.to),
        change_reason: s.stage === "OPERATING" &&
            stages.some((x) => x.stage === "SUSPENDED" && x.to === s.from)
          ? "装修完成，恢复节能服务"
          : STAGE_REASONS[s.stage],
      });
    }
    if (stages.length > 0 || chance(rng, 0.5)) {
      stageSnapshots.push({
        store_id: id,
        stage: current ?? null,
        stage_basis: "LEGACY_PROJECT_PROGRESS",
        legacy_progress: current === undefined ? null : PROGRESS[current],
        captured_at: SYNCED_AT,
        source_reference: `legacy:project/${storeCode}`,
        basis: "旧系统项目进度快照；以阶段历史为准",
      });
    }

    const plan = planEnergy(
      rng,
      { id, scopeId },
      open,
      last,
      stages,
      end,
      seasonalPermille,
    );
    energy.push(plan.energy);

    const trial = stages.find((s) => s.stage === "TRIAL");
    if (trial !== undefined) {
      const deviceCount = intIn(rng, 2, 7);
      const storeDevices: Array<SnapshotDevice> = [];
      for (let k = 0; k < deviceCount; k++) {
        const kind = DEVICE_KINDS[k < 2 ? k : pick(rng, [2, 2, 3])];
        const deviceId = devices.length + 1;
        const sourceId = `D${
          (mix(seed, deviceId) >>> 0).toString(16).toUpperCase().padStart(
            8,
            "0",
          )
        }`;
        const status = exit !== undefined ? pick(rng, ["OFFLINE", "UNKNOWN"] as const) : pick(
          rng,
          [
            "ONLINE",
            "ONLINE",
            "ONLINE",
            "ONLINE",
            "ONLINE",
            "ONLINE",
            "OFFLINE",
            "UNKNOWN",
          ] as const,
        );
        const device: SnapshotDevice = {
          id: deviceId,
          store_id: id,
          source_device_id: sourceId,
          device_name: chance(rng, 0.12) ? null : `${pick(rng, kind.names)}${k + 1}`,
          device_code: `${storeCode}-${kind.code}${String(k + 1).padStart(2, "0")}`,
          device_type: kind.type,
          material_code: chance(rng, 0.2) ? null : kind.material,
          online_status: status,
          status_observed_at: status === "UNKNOWN" ? null : isoAt(end, intIn(rng, 0, 110)),
          synced_at: SYNCED_AT,
          source_reference: `legacy:device/${sourceId}`,
        };
        devices.push(device);
        storeDevices.push(device);
      }
      for (const device of storeDevices) {
        if (device.online_status !== "OFFLINE" && !chance(rng, 0.2)) continue;
        const events = intIn(rng, 1, 3);
        let day = dayIndex("2026-09-01") + intIn(rng, 0, 40);
        for (let e = 0; e < events && day < end; e++) {
          const at = intIn(rng, 0, 1439);
          deviceEvents.push({
            id: deviceEvents.length + 1,
            store_id: id,
            device_id: device.id,
            event_type: "OFFLINE",
            occurred_at: isoAt(day, at),
            note: pick(rng, ["心跳超时", "网关断电", null]),
          });
          const stillOffline = device.online_status === "OFFLINE" &&
            e === events - 1;
          if (!stillOffline) {
            const back = Math.min(at + intIn(rng, 5, 600), 1439);
            deviceEvents.push({
              id: deviceEvents.length + 1,
              store_id: id,
              device_id: device.id,
              event_type: "ONLINE",
              occurred_at: isoAt(day, back),
              note: pick(rng, ["恢复上线", null]),
            });
          }
          day += intIn(rng, 3, 20);
        }
      }

      const configured = intIn(rng, 2, 6);
      const dispatched = exit !== undefined ? 0 : intIn(rng, 0, configured);
      strategies.push({
        store_id: id,
        configured_count: configured,
        dispatched_count: chance(rng, 0.05) ? null : dispatched,
        distinguish_calendar: pick(rng, [true, false, null]),
        execution_status: exit !== undefined
          ? "STOPPED"
          : dispatched === configured
          ? "EXECUTING"
          : dispatched === 0
          ? "NOT_DISPATCHED"
          : "PARTIALLY_DISPATCHED",
        source_reference: `legacy:strategy/${storeCode}`,
        observed_at: chance(rng, 0.9) ? isoAt(end, intIn(rng, 0, 100)) : null,
        synced_at: SYNCED_AT,
      });
      for (let k = 0; k < configured; k++) {
        const issued = k < dispatched;
        const publishDay = trial.from + intIn(rng, 0, 30);
        strategyItems.push({
          store_id: id,
          position: k + 1,
          name: STRATEGY_NAMES[k % STRATEGY_NAMES.length],
          date_category: pick(rng, ["WORKDAY", "WEEKEND", "HOLIDAY", null]),
          day_week: pick(rng, ["1,2,3,4,5", "6,7", "1,2,3,4,5,6,7", null]),
          publish_status: issued ? "PUBLISHED" : pick(rng, ["PUBLISHED", "DRAFT"]),
          issue_status: issued ? 1 : pick(rng, [0, null]),
          publish_time: isoAt(publishDay, intIn(rng, 60, 600)),
          issue_time: issued ? isoAt(publishDay + 1, intIn(rng, 60, 600)) : null,
        });
      }

      if (chance(rng, 0.85)) {
        const periodDays: Array<[number, number | null]> = [];
        const shape = rng();
        if (shape < 0.4) periodDays.push([trial.from, null]);
        else if (shape < 0.8) {
          const cut = trial.from + intIn(rng, 150, 200);
          periodDays.push([trial.from, cut], [cut + 1, null]);
        } else periodDays.push([trial.from, trial.from + intIn(rng, 90, 180)]);
        for (const [from, to] of periodDays) {
          const items: Array<SnapshotPricedItem> = [];
          const itemCount = intIn(rng, 1, 4);
          for (let k = 0; k < itemCount; k++) {
            const item = PRICED_ITEMS[k === 0 ? 0 : intIn(rng, 1, 4)];
            const qty = chance(rng, 0.1) && item.qty[1] > 1
              ? `${intIn(rng, item.qty[0], item.qty[1] - 1)}.5`
              : String(intIn(rng, item.qty[0], item.qty[1]));
            items.push({
              item_name: item.name,
              unit_price: fmt2(intIn(rng, item.lo, item.hi)),
              priced_quantity: qty,
            });
          }
          const cost = items.reduce(
            (sum, x) => sum.plus(new Decimal(x.unit_price).times(x.priced_quantity)),
            new Decimal(0),
          );
          const ratio = rng();
          targetPeriods.push({
            id: targetPeriods.length + 1,
            store_id: id,
            scope_id: scopeId,
            valid_from: dateOfDay(from),
            valid_to: to === null ? null : dateOfDay(to),
            // Deliberately cost/200: the legacy value must never be mistaken for TES-180 or TES-210.
            tes_kwh: chance(rng, 0.1)
              ? null
              : cost.div(200).toDecimalPlaces(4, Decimal.ROUND_HALF_UP).toFixed(
                4,
              ),
            tev_warning_ratio: ratio < 0.85
              ? "1.2"
              : ratio < 0.93
              ? "1.1"
              : ratio < 0.98
              ? "1.3"
              : "1.15",
            source_kind: "LEGACY_CONTRACT",
            source_reference: `legacy:contract/${storeCode}#${targetPeriods.length + 1}`,
            items,
          });
        }

        const stale = chance(rng, 0.15);
        const lastObservation = stale ? dayIndex("2026-03-01") + intIn(rng, 0, 60) : last;
        for (
          let day = trial.from + intIn(rng, 0, 10);
          day <= lastObservation;
          day += intIn(rng, 25, 35)
        ) {
          const r2 = rng();
          const value = scale(plan.summerTicks, intIn(rng, 850, 950));
          tevObservations.push({
            store_id: id,
            scope_id: scopeId,
            observed_date: dateOfDay(day),
            value_kwh: r2 < 0.04
              ? null
              : r2 < 0.07
              ? "0.0000"
              : r2 < 0.09
              ? `-${fmt4(value)}`
              : fmt4(value),
            is_valid: r2 >= 0.04 && !(r2 >= 0.09 && r2 < 0.13),
            source_reference: `legacy:tev/${storeCode}/${dateOfDay(day)}`,
          });
        }
      }
    }

    if (chance(rng, trial === undefined ? 0.5 : 0.25)) {
      const cents = intIn(rng, 900_000, 3_600_000);
      const cost = new Decimal(cents).div(100);
      const t180 = cost.div(180).toDecimalPlaces(4, Decimal.ROUND_HALF_UP)
        .toFixed(4);
      const t210 = cost.div(210).toDecimalPlaces(4, Decimal.ROUND_HALF_UP)
        .toFixed(4);
      const known = pick(rng, [180, 210, null] as const);
      const sheet = `sht_${mix(seed, 100_000 + id).toString(36)}`;
      const row = intIn(rng, 2, 400);
      candidates.push({
        store_id: id,
        tes_180_kwh: t180,
        tes_210_kwh: t210,
        known_payback_days: known,
        selected_candidate_kwh: known === 180 ? t180 : known === 210 ? t210 : null,
        source_revision: intIn(rng, 1, 5),
        source_sheet_id: sheet,
        source_row: row,
        source_url: `https://sheets.example.cn/d/${sheet}#row=${row}`,
        status: known === null ? "AWAITING_SETTLEMENT_AND_DATE" : "AWAITING_EFFECTIVE_DATE",
        unit: "kWh/日",
        basis: "设备报价合计 ÷ 回收天数 ÷ 电价 1 元/kWh",
        capture_id: 1 + (i % 7),
        source_record_id: 50_000 + id,
      });
    }
  }

  return {
    format: SNAPSHOT_FORMAT,
    dataset: {
      label: "Demo chain snapshot 2026-11",
      start: DEMO_START,
      end: DEMO_END,
      source_policy: "CLEANED_THEN_LEGACY_THEN_NULL",
      timezone: "Asia/Shanghai",
      unit: "kWh",
    },
    brands: BRANDS.map((b) => ({ id: b.id, name: b.name })),
    stores,
    stage_history: stageHistory,
    stage_snapshots: stageSnapshots,
    devices,
    device_events: deviceEvents,
    strategies,
    strategy_items: strategyItems,
    target_periods: targetPeriods,
    tev_observations: tevObservations,
    target_candidates: candidates,
    energy,
  };
};
