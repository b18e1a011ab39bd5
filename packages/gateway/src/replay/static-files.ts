/**
 * Extensions of static files: style sheets, scripts, images, fonts, media and documents a page loads with it. A
 * browser fetches dozens of them per page view in a burst, so a rule measured on them would be a page's burst, not
 * an API's rate: `sluice recommend` proposes no endpoint rule for them.
 */
export const STATIC_EXTENSIONS: ReadonlySet<string> = new Set([
  'css',
  'js',
  'mjs',
  'map',
  'png',
  'jpg',
  'jpeg',
  'gif',
  'svg',
  'ico',
  'webp',
  'avif',
  'bmp',
  'woff',
  'woff2',
  'ttf',
  'otf',
  'eot',
  'mp4',
  'webm',
  'mp3',
  'wav',
  'pdf',
  'txt',
]);

/**
 * True when a path template names a static file: its last segment ends with one of {@link STATIC_EXTENSIONS}
 * (compared without case: `/img/Logo.PNG`).
 *
 * @param template - a path template (no query).
 */
export function isStaticPath(template: string): boolean {
  const slash = template.lastIndexOf('/');
  const dot = template.lastIndexOf('.');
  if (dot <= slash + 1 || template.length - dot > 6) return false;
  return STATIC_EXTENSIONS.has(template.slice(dot + 1).toLowerCase());
}
