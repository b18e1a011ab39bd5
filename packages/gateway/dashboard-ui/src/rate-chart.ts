import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Names and colours of the three channels of a view. */
export interface ChannelLabels {
  readonly names: readonly [string, string, string];
}

const COLORS = ['#3fb950', '#f85149', '#6cb6ff'] as const;
// Only the allowed line is filled: overlapping fills would mix into colours that belong to no series.
const FILLS = ['rgba(63,185,80,0.12)', undefined, undefined] as const;

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

function css(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/**
 * The live requests-per-second chart (uPlot): three lines over the last minutes, resized with its container.
 * Hovering shows each channel's value at that second in the legend.
 */
export class RateChart {
  #plot: uPlot;
  readonly #host: HTMLElement;
  #names: readonly [string, string, string];
  readonly #resize: ResizeObserver;
  #windowSeconds = 300;

  /**
   * @param host - the element the chart fills (its width sets the chart's).
   * @param labels - the channel names.
   */
  constructor(host: HTMLElement, labels: ChannelLabels) {
    this.#host = host;
    this.#names = labels.names;
    this.#plot = this.#create([[], [], [], []]);
    this.#resize = new ResizeObserver(() => this.#fit());
    this.#resize.observe(host);
  }

  /**
   * Shows new data; rebuilds the series when the channel names change (another view was picked).
   *
   * @param times - Unix seconds.
   * @param channels - three arrays aligned with `times`.
   * @param labels - the channel names.
   * @param windowSeconds - the span of the time axis, ending at the newest second.
   */
  update(
    times: readonly number[],
    channels: readonly number[][],
    labels: ChannelLabels,
    windowSeconds = 300,
  ): void {
    this.#windowSeconds = windowSeconds;
    const data: uPlot.AlignedData = [times as number[], channels[0], channels[1], channels[2]];
    if (labels.names.some((n, i) => n !== this.#names[i])) {
      this.#names = labels.names;
      this.#plot.destroy();
      this.#plot = this.#create(data);
      return;
    }
    this.#plot.setData(data);
  }

  #size(): { width: number; height: number } {
    const width = Math.max(240, Math.floor(this.#host.clientWidth));
    return { width, height: width < 560 ? 200 : 280 };
  }

  #fit(): void {
    const { width, height } = this.#size();
    if (width !== this.#plot.width || height !== this.#plot.height) this.#plot.setSize({ width, height });
  }

  #create(data: uPlot.AlignedData): uPlot {
    const grid = css('--grid', '#2a313c');
    const text = css('--muted', '#9aa7b4');
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts: uPlot.Options = {
      ...this.#size(),
      cursor: { drag: { x: false, y: false }, points: { size: 6 } },
      legend: { live: true },
      scales: {
        // A window ending at the newest second, at least a minute wide and growing with the data up to the
        // history, so a fresh gateway does not show a nearly empty five minutes; then it scrolls like a strip chart.
        x: {
          time: true,
          range: (_u, min, max) => [max - Math.min(this.#windowSeconds, Math.max(60, max - min)), max],
        },
        y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
      },
      axes: [
        {
          ...axis,
          space: 64,
          // 24-hour times; seconds only on ticks that are not whole minutes.
          values: (_u, splits) =>
            splits.map((v) => {
              const d = new Date(v * 1000);
              const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
              return d.getSeconds() === 0 ? hm : `${hm}:${pad(d.getSeconds())}`;
            }),
        },
        { ...axis, size: 48, label: 'requests / s', labelSize: 16, labelFont: '12px system-ui, sans-serif' },
      ],
      series: [
        { label: 'Time', value: '{HH}:{mm}:{ss}' },
        ...this.#names.map((label, i) => ({
          label,
          stroke: COLORS[i],
          fill: FILLS[i],
          width: 2,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '-' : String(v)),
        })),
      ],
    };
    return new uPlot(opts, data, this.#host);
  }
}
