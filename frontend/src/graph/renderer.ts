// The graph view: one <svg> that shows a laid-out hierarchy, composed of its scene (the elements
// and their level of detail, scene.ts), their paint and highlight (paint.ts) and the camera with
// its mouse and keys (camera.ts). Several can share a page (the comparison's two panes).
import type { LayoutBox } from "../layout/protocol";
import { isGroupKey } from "../model/hierarchy";
import { s } from "../ui/dom";
import { bindPointer, Camera, layerLeftIn, readableInView } from "./camera";
import { colourGroup, paintHighlight, paintScene, type Highlight, type Paint } from "./paint";
import { lodClass, Scene, type GraphData } from "./scene";
import type { Viewport } from "./viewport";


export interface GraphCallbacks {
  onSelect(key: string | null): void;
  onToggle(key: string): void;
  onHover(key: string | null): void;
  /**
   * The viewport changed; `auto` for moves the view made itself (fit, centring on a node, their
   * animation frames) rather than the user's pan and zoom. Not called for setViewport(v, false).
   */
  onView?(v: Viewport, auto: boolean): void;
}

/** Distinguishes the SVG ids (arrow markers) of the graph views of one page. */
let viewCount = 0;

export class GraphView {
  readonly el: HTMLDivElement;
  /** Ids of this view's arrow markers (unique in the page: several panes share one document). */
  private readonly arrowId: string;
  private readonly arrowActId: string;
  private svg: SVGSVGElement;
  private vp: SVGGElement;
  private scene: Scene | null = null;
  private camera: Camera;
  private hl: Highlight = { selected: null, hovered: null, hits: new Set(), currentHit: null };
  private matRaf = 0;
  private lod = "";

  constructor(private readonly cb: GraphCallbacks) {
    this.el = document.createElement("div");
    this.el.className = "adl-graph";
    this.el.tabIndex = 0;
    this.el.dataset.testid = "graph";
    const n = ++viewCount;
    this.arrowId = `adl-arrow-${n}`;
    this.arrowActId = `adl-arrow-act-${n}`;
    this.svg = s("svg", { class: "adl-svg", "data-testid": "graph-svg" });
    const defs = s("defs");
    defs.appendChild(
      s("marker", { id: this.arrowId, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse", markerUnits: "userSpaceOnUse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" })),
    );
    defs.appendChild(
      s("marker", { id: this.arrowActId, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse", markerUnits: "userSpaceOnUse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-act" })),
    );
    this.svg.appendChild(defs);
    this.vp = s("g", { class: "vp" });
    this.svg.appendChild(this.vp);
    this.el.appendChild(this.svg);
    this.camera = new Camera(this.el, (v, notify, auto) => this.applyView(v, notify, auto), () => this.scene?.data.layout ?? null,
      (v) => (this.scene ? layerLeftIn(this.scene.data, v, this.camera.size().h) : null),
      (v) => {
        if (!this.scene) return true;
        const { w, h } = this.camera.size();
        return readableInView(this.scene.data, v, w, h);
      },
      () => this.scene?.data ?? null);
    bindPointer(this.el, this.camera, {
      keyAt: (target) => this.keyAt(target),
      boxOf: (key) => this.boxOf(key),
      hover: (key, left) => this.pointerOver(key, left),
      select: (key) => this.cb.onSelect(key),
      toggle: (key) => this.cb.onToggle(key),
    });
  }

  render(data: GraphData, paint: Paint): void {
    this.scene = new Scene(data, this.vp, this.arrowId);
    this.applyPaint(paint);
    this.paintHighlight();
    const k = this.camera.current().k;
    this.scene.scaleHeaders(k);
    this.scene.updateSummaries(this.svg, k);
  }

  applyPaint(paint: Paint): void {
    if (this.scene) paintScene(this.scene, paint);
  }

  // ---------------------------------------------------------------- highlight

  setSelected(key: string | null): void {
    this.hl.selected = key;
    this.paintHighlight();
  }

  setHovered(key: string | null): void {
    if (key === this.hl.hovered) return;
    this.hl.hovered = key;
    this.paintHighlight();
  }

  setHits(keys: string[], current: string | null): void {
    this.hl.hits = new Set(keys);
    this.hl.currentHit = current;
    this.paintHighlight();
  }

  private paintHighlight(): void {
    paintHighlight(this.scene, this.vp, this.hl, this.arrowId, this.arrowActId);
  }

  /** Leaves only are hovered (a group box under the pointer is not a target of its own). */
  private pointerOver(key: string | null, left: boolean): void {
    if (left) {
      if (this.hl.hovered) {
        this.setHovered(null);
        this.cb.onHover(null);
      }
      return;
    }
    const hovKey = key && this.scene?.leafParts.has(key) ? key : null;
    if (hovKey) this.scene?.ensureTooltip(hovKey);
    if (hovKey !== this.hl.hovered) {
      this.setHovered(hovKey);
      this.cb.onHover(hovKey);
    }
  }

  private keyAt(target: EventTarget | null): string | null {
    let el = target as Element | null;
    while (el && el !== this.svg) {
      if (el instanceof SVGGElement && el.dataset.key) return el.dataset.key;
      el = el.parentElement;
    }
    return null;
  }

  // ---------------------------------------------------------------- viewport

  private applyView(v: Viewport, notify: boolean, auto: boolean): void {
    this.scheduleMaterialize();
    this.vp.setAttribute("transform", `translate(${v.x.toFixed(2)},${v.y.toFixed(2)}) scale(${v.k.toFixed(5)})`);
    const lod = lodClass(v.k);
    if (lod !== this.lod) {
      if (this.lod) this.svg.classList.remove(this.lod);
      if (lod) this.svg.classList.add(lod);
      this.lod = lod;
    }
    this.scene?.scaleHeaders(v.k);
    this.scene?.updateSummaries(this.svg, v.k);
    if (notify) this.cb.onView?.({ ...v }, auto);
  }

  private materialize(): void {
    this.matRaf = 0;
    const { w, h } = this.camera.size();
    this.scene?.materialize(this.camera.current(), w, h);
  }

  private scheduleMaterialize(): void {
    if (!this.matRaf) this.matRaf = requestAnimationFrame(() => this.materialize());
  }

  /** Node text in the DOM now (for a node about to be looked at). */
  materializeNow(): void {
    cancelAnimationFrame(this.matRaf);
    this.materialize();
  }

  /** Sets the viewport from outside (a synchronised pane, the minimap); `notify` calls onView. */
  setViewport(v: Viewport, notify = false): void {
    this.camera.setViewport(v, notify);
  }

  getView(): Viewport {
    return this.camera.get();
  }

  /** Size of the view in pixels. */
  viewSize(): { w: number; h: number } {
    return this.camera.size();
  }

  fit(animate = false, initial = false): void {
    this.camera.fit(animate, initial);
  }

  /** See Camera.readableView. */
  readableView(hot: string | null, mayCollapse = true): string[] {
    return this.scene ? this.camera.readableView(this.scene.data, this.scene.boxes, hot, mayCollapse) : [];
  }

  /** Centres a visible key; zooms in to a readable scale when the graph is zoomed far out. */
  centreOn(key: string, animate = true): boolean {
    const b = this.boxOf(key);
    if (!b) return false;
    this.camera.centreOn(b, animate);
    return true;
  }

  ensureVisible(key: string): void {
    const b = this.boxOf(key);
    if (b) this.camera.ensureVisible(b);
  }

  zoomBy(f: number, cx?: number, cy?: number): void {
    this.camera.zoomBy(f, cx, cy);
  }

  panBy(dx: number, dy: number): void {
    this.camera.panBy(dx, dy);
  }

  setScale(k: number): void {
    this.camera.setScale(k);
  }

  boxOf(key: string): LayoutBox | undefined {
    return this.scene?.boxes.get(key);
  }

  /** See Camera.anchorKey. */
  anchorKey(): string | null {
    return this.scene ? this.camera.anchorKey(this.scene.data, this.scene.boxes, this.hl.selected) : null;
  }

  /** Where the box of `key` is on screen now (null when it is not drawn). */
  screenOf(key: string): { x: number; y: number } | null {
    const b = this.boxOf(key);
    return b ? this.camera.screenOf(b) : null;
  }

  /**
   * The view that keeps `key` (or the group that now stands for it, `rep`) on screen after a new
   * layout, its top-left at `before` (from screenOf before the layout): see keepInView. `legible`:
   * it was expanded, so the zoom is raised to LEGIBLE_K. Null when neither is drawn.
   */
  viewKeeping(key: string, rep: string | undefined, before: { x: number; y: number } | null, legible: boolean): Viewport | null {
    const b = this.boxOf(key) ?? (rep ? this.boxOf(rep) : undefined);
    return b ? this.camera.keeping(b, before, legible) : null;
  }

  /** See Camera.showLeftEdge; `keep`: the key whose box must stay in view (if drawn). */
  showLeftEdge(keep: string | null, force = true): void {
    this.camera.showLeftEdge(keep ? this.boxOf(keep) ?? null : null, force);
    if (this.scene) this.camera.ensureReadable(this.scene.data);
  }

  /** Where the layer's left edge is on screen (null: nothing drawn). */
  leftEdgeX(): number | null {
    return this.camera.leftEdgeX();
  }

  /** How far across the view must move for the layer's left edge to be in view (0: it is). */
  leftEdgeShift(): number {
    return this.camera.leftEdgeShift();
  }

  /** Whether the view shows text that can be read. */
  readableNow(): boolean {
    return this.camera.readableNow();
  }

  /** See Camera.panToReadable. */
  panToReadable(): boolean {
    return this.camera.panToReadable();
  }

  /** See Camera.readableShiftsDown. */
  readableShiftsDown(): number[] {
    return this.camera.readableShiftsDown();
  }

  /** See Camera.ensureReadable. */
  ensureReadable(): void {
    if (this.scene) this.camera.ensureReadable(this.scene.data);
  }

  leftEdgeInView(): boolean {
    return this.camera.leftEdgeInView();
  }

  // ---------------------------------------------------------------- minimap and export

  /** The drawn layout (boxes and total size), or null before the first draw. */
  layoutInfo(): { width: number; height: number; boxes: LayoutBox[]; containers: Set<string> } | null {
    const d = this.scene?.data;
    if (!d) return null;
    return { width: d.layout.width, height: d.layout.height, boxes: d.layout.boxes, containers: new Set(d.vis.containers.map((c) => c.key)) };
  }

  /** The colour group of a drawn key (for the minimap). */
  colourGroupOf(key: string): string {
    const d = this.scene?.data;
    const it = d?.h.items.get(key);
    return it && d ? colourGroup(d.h, it) : "other";
  }

  /**
   * Gets the SVG ready to be copied for export: every node's text and edge label built, full
   * group titles, no level-of-detail hiding. Returns the live <svg>, the graph's size and a
   * function that restores the on-screen state.
   */
  prepareExport(): { svg: SVGSVGElement; width: number; height: number; restore: () => void } | null {
    const sc = this.scene;
    if (!sc) return null;
    cancelAnimationFrame(this.matRaf);
    sc.materializeAll();
    const lod = this.lod;
    if (lod) this.svg.classList.remove(lod);
    sc.scaleHeaders(1, true);
    return {
      svg: this.svg, width: sc.data.layout.width, height: sc.data.layout.height,
      restore: () => {
        if (lod) this.svg.classList.add(lod);
        sc.scaleHeaders(this.camera.current().k, true);
      },
    };
  }

  // ---------------------------------------------------------------- keys

  /** Keyboard navigation (the camera's keys; Enter toggles the selected group); true when handled. */
  handleKey(ev: KeyboardEvent): boolean {
    if (ev.key.toLowerCase() === "enter") {
      // Expands or collapses the selected group (it stays on screen, as on a double-click).
      if (!this.hl.selected || !isGroupKey(this.hl.selected)) return false;
      this.cb.onToggle(this.hl.selected);
      return true;
    }
    return this.camera.handleKey(ev);
  }

  /** Public ids of drawn op nodes (test hook). */
  drawnNodeIds(): string[] {
    return this.scene?.drawnNodeIds() ?? [];
  }
}
